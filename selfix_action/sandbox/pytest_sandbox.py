"""The project's pytest suite, run on a scratch copy of the repository inside the sandbox.

Each run is one subprocess (see ``process.run_process``) of the project's own test command, with selfix's
collector plugin loaded to record per-test outcomes, exceptions and (optionally) per-test coverage.

The tests to run are never put on the command line: the test command may name paths of its own
(``python -m pytest tests/x.py``), which pytest would run beside them, and pytest before 8 refuses positional
arguments after a ``--`` that follows one (a usage error). The collector plugin reads them from a file named by
``SELFIX_SELECT`` and makes them the run's only arguments (``config.args``), in every pytest version.
A run whose tests did not all report (usage or internal error, interrupted collection, no test collected) says
so in ``TestRun.error``; a test without a result is never taken as passed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from selfix_action.errors import InputError, SandboxError
from selfix_action.repair.paths import IGNORED_DIR_NAMES, QA_TEST_DIR, is_ignored_path, is_source_path, is_test_path
from selfix_action.repair.values import (
    CallProbe,
    CandidateCheck,
    Frame,
    ProbeLine,
    ProbeTarget,
    PropertyLibrary,
    TestResult,
    TestRun,
    TestStatus,
)
from selfix_action.sandbox import hypothesis_lib, scratch
from selfix_action.sandbox.forkserver import ForkServer, ForkServerUnavailable, worker_result
from selfix_action.sandbox.hotswap import UNKNOWN_TEST, UNSWAPPABLE, HotServer, skeleton
from selfix_action.sandbox.isolation import Isolation, former_home
from selfix_action.sandbox.loopback import HostBridge
from selfix_action.sandbox.process import Limits, ProcessResult, memory_cap, private_dirs, run_process, sandbox_env

PLUGIN_DIR = Path(__file__).parent / "plugin"
# The oldest project interpreter selfix's pytest plugins (collector, fork and hot workers) are tested on
# (tests/sandbox/test_project_pythons.py heals an example on each one the machine has).
OLDEST_PROJECT_PYTHON = (3, 7)
_MAX_HANG_RETRIES = 3
# The behaviour probe's bounds: recorded calls per function, inputs per recorded call, seconds per call.
PROBE_MAX_CALLS = 8
PROBE_MAX_VARIATIONS = 12
PROBE_CALL_SECONDS = 2.0
_PROBE_TEXT = 600  # characters of an input or outcome kept from a replay's line
_PROBE_LINES = 5000
_MIN_RUN_SECONDS = 0.5  # less left before the heal's deadline: no run is started
# pytest's exit codes that mean the run could not report on the tests it was given (0: all passed, 1: some failed).
_PYTEST_TROUBLE = {
    2: "pytest was interrupted (exit 2: errors during collection)",
    3: "pytest hit an internal error (exit 3)",
    4: "pytest refused its arguments (usage error, exit 4)",
    5: "pytest collected no test (exit 5)",
}


def _copy_ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in IGNORED_DIR_NAMES or n.endswith(".egg-info") or n.endswith(".pyc")}


def _test_environment(record: dict[str, Any]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None:
    """The plugins and root fixtures a run's collector reported, checked (it is the project's process talking)."""
    plugins, fixtures = record.get("plugins"), record.get("fixtures")
    if not isinstance(plugins, list) or not isinstance(fixtures, list):
        return None
    names = tuple(str(p)[:80] for p in plugins if isinstance(p, str))[:100]
    pairs = tuple(
        (str(f[0])[:80], str(f[1])[:80])
        for f in fixtures
        if isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)
    )[:300]
    return names, pairs


PYTHON_VERSION = re.compile(r"\d+\.\d+(\.\d+)?[\w+.-]{0,16}")


def _python_version(record: dict[str, Any]) -> str:
    """The interpreter version a run's collector reported ("" when absent or not a version)."""
    version = record.get("python")
    return version if isinstance(version, str) and PYTHON_VERSION.fullmatch(version) else ""


class PytestSandbox:
    """A scratch copy of ``repo`` and the means to run its tests there."""

    def __init__(
        self,
        repo: Path,
        test_cmd: Sequence[str],
        *,
        limits: Limits | None = None,
        env_source: Mapping[str, str] | None = None,
        scratch_parent: Path | None = None,
        isolation: Isolation | None = None,
        hot: bool = True,
        parallel_checks: int = 1,
        line_collector: str = "fallback",
        hypothesis_cache: Path | None = None,
    ) -> None:
        self.repo = repo.resolve()
        if not self.repo.is_dir():
            raise InputError(f"not a directory: {repo}")
        if not test_cmd:
            raise InputError("the test command is empty")
        # `<python> [flags] -m pytest ...`: its parts (the warm and hot workers start the same interpreter with the
        # same flags), with the flags that would hide selfix's plugins and the scratch copy from it rewritten.
        self._pytest = pytest_command(test_cmd)
        if self._pytest is not None:
            python, flags, rest, notes = self._pytest
            self.test_cmd = [python, *flags, "-m", "pytest", *rest]
        else:
            self.test_cmd, notes = list(test_cmd), ()
        if parallel_checks < 1:
            raise InputError("parallel checks must be at least 1")
        # Per-test coverage without coverage.py: selfix's own line collector (the plugin's LineCollector) when the
        # project's environment lacks it ("fallback"); "always" uses it even then, "never" leaves tracebacks alone.
        if line_collector not in ("fallback", "always", "never"):
            raise InputError(f"line_collector must be fallback, always or never, got {line_collector!r}")
        self.line_collector = line_collector
        self.coverage_collector = ""  # what measured the last coverage run: coverage.py, sys.settrace, ...
        # The memory limit is a ceiling, lowered to this machine's share per check that can run at once.
        wanted = limits or Limits()
        self.memory = memory_cap(wanted.memory_bytes, parallel_checks)
        self.limits = dataclasses.replace(wanted, memory_bytes=self.memory.bytes)
        # None: a plain subprocess (the old behaviour). Else every run is wrapped in it, with only the
        # scratch dir writable and the original repository hidden.
        self.isolation = isolation
        self._env_source = dict(os.environ if env_source is None else env_source)
        self._tmp = Path(tempfile.mkdtemp(prefix="selfix-", dir=scratch_parent))
        self.root = self._tmp / "repo"
        shutil.copytree(self.repo, self.root, ignore=_copy_ignore, symlinks=True)
        # The tests' own HOME, XDG dirs and TMPDIR, writable at every level as in CI; the home the caller's
        # environment named stays hidden (with the original repository) though the runs no longer name it.
        self._private_env = private_dirs(self._tmp)
        self._hidden = (self.repo, *former_home(self._env_source, (self._tmp,)))
        # The project's editable installs point into the repository, which the runs cannot see: their folders in
        # the scratch copy go on sys.path instead (a monorepo's `pip install -e packages/api` beside the root).
        self._editable = editable_folders(self.test_cmd[0], self.repo, self.root)
        # allow_ports in a network namespace: selfix's half of the relay to the host's loopback (loopback.py).
        self._bridge: HostBridge | None = None
        if isolation is not None and isolation.bridged:
            self._bridge = HostBridge(self._tmp / ".selfix-ports", isolation.config.allow_ports)
            self.isolation = isolation.with_relays(self._bridge.relays)
        self.runs = 0
        self.warm_runs = 0
        self._fork_server: ForkServer | None = None
        self._fork_disabled = ""  # why the warm worker is not used, once known
        self.test_seconds = 0.0
        self._call_wall: float | None = None  # a tighter wall limit for this run_tests call's hot checks
        self._deadline: float | None = None  # this run_tests call's end (monotonic): the heal's time limit
        # The hot worker (see hotswap.py): body-only patches are swapped into a process that imported the
        # project and collected its tests once.
        self._hot: HotServer | None = None
        self._hot_disabled = "" if hot else "hot checks turned off"
        self._current: dict[str, str] = {}  # the patch in effect (nested ``patched`` calls merge)
        self._skeletons: dict[str, str | None] = {}
        self._originals: dict[str, str] = {}  # every file ever patched: the worker may hold any version of it
        self.hot_runs = 0
        # What selfix changed of the project's own pytest configuration (xdist workers, pytest-randomly's order,
        # reruns), as the collector plugin reported it (``_overrides`` there): for the report.
        self.config_overrides: tuple[str, ...] = tuple(notes)
        self.parallel_checks = parallel_checks  # hot checks of different candidates run at once (cores)
        # Where selfix keeps its copies of Hypothesis for property tests, per project Python version.
        self._hypothesis_cache = hypothesis_cache or hypothesis_lib.default_cache_root(self._env_source)
        self._hypothesis: PropertyLibrary | None = None

    def limits_report(self) -> dict[str, object]:
        """The resource limits every test run had, for the report (beside ``Isolation.report()``)."""
        return scratch.limits_report(self.limits, self.memory, self.isolation, self.parallel_checks)

    # -- files ---------------------------------------------------------------------------------------
    def close(self) -> None:
        if self._hot is not None:
            self._hot.close()
            self._hot = None
        if self._fork_server is not None:
            self._fork_server.close()
            self._fork_server = None
        if self._bridge is not None:
            self._bridge.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> PytestSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _path(self, rel: str) -> Path:
        return scratch.inside(self.root, rel)

    def read_file(self, path: str) -> str:
        return scratch.read_text(self.root, path)

    def source_files(self) -> list[str]:
        return scratch.source_files(self.root, is_source_path)

    def _remember(self, files: Mapping[str, str]) -> None:
        """Keep the unpatched text (and skeleton) of every file a patch touches: hot checks compare with it."""
        for rel in files:
            if rel not in self._skeletons:
                path = self._path(rel)
                text = path.read_text(encoding="utf-8") if path.exists() else None
                self._skeletons[rel] = skeleton(text) if text is not None else None
                if text is not None:
                    self._originals[rel] = text

    @contextmanager
    def patched(self, files: Mapping[str, str]) -> Iterator[None]:
        self._remember(files)
        before = dict(self._current)
        self._current.update(files)
        originals: dict[str, str | None] = {}
        try:
            for rel, text in files.items():
                path = self._path(rel)
                originals[rel] = path.read_text(encoding="utf-8") if path.exists() else None
                path.parent.mkdir(parents=True, exist_ok=True)
                self._write(rel, text)
            yield
        finally:
            self._current = before
            for rel, original in originals.items():
                if original is None:
                    self._path(rel).unlink(missing_ok=True)
                else:
                    self._write(rel, original)

    def _write(self, rel: str, text: str) -> None:
        scratch.write_text(self._path(rel), text)

    # -- test runs -----------------------------------------------------------------------------------
    def _env(
        self, results_file: Path, coverage: bool, select: Path | None = None, stop_first: bool = False
    ) -> dict[str, str]:
        pythonpath = [str(PLUGIN_DIR), str(self.root)]
        if (self.root / "src").is_dir():
            pythonpath.append(str(self.root / "src"))
        pythonpath += [str(folder) for folder in self._editable if str(folder) not in pythonpath]
        return sandbox_env(
            self._env_source,
            extra={
                **self._private_env,
                "PYTHONPATH": os.pathsep.join(pythonpath),
                "SELFIX_RESULTS": str(results_file),
                "SELFIX_COVERAGE": "1" if coverage else "0",
                "SELFIX_LINE_COLLECTOR": self.line_collector,
                "SELFIX_ROOT": str(self.root),
                "SELFIX_STOP_FIRST": "1" if stop_first else "0",  # else the project's -x / --maxfail is undone
                **({"SELFIX_SELECT": str(select)} if select is not None else {}),
                **({"SELFIX_ADD": json.dumps(added)} if select is None and (added := self.added_tests()) else {}),
            },
        )

    def added_tests(self) -> list[str]:
        """Test files a ``patched`` call added outside the scratch QA folder (a reported error's reproduction test):
        part of the suite while they are there, so a whole-suite run collects them beside the paths the project's
        test command names (which may name only some modules)."""
        return sorted(
            rel
            for rel, original in self._skeletons.items()
            if original is None and rel in self._current and is_test_path(rel) and not rel.startswith(QA_TEST_DIR + "/")
        )

    def run_tests(
        self,
        nodeids: Sequence[str] | None = None,
        *,
        stop_first: bool = False,
        coverage: bool = False,
        extra_test_files: Mapping[str, str] | None = None,
        warm: bool = False,
        wall_seconds: float | None = None,
        time_left: float | None = None,
    ) -> TestRun:
        """Run the tests; ``wall_seconds`` (lower than the sandbox's limit) caps checks whose cost is the tests' own
        time (hot checks), with the CPU limit cut to match. Runs that also pay for an
        interpreter start, imports and collection (cold, fork-per-run warm) keep the sandbox's limits.
        ``time_left`` (the heal's remaining seconds) bounds every kind of run, and the retries past a hung test:
        a run cut there is ``deadline_reached``, and the test it was in is not called hung."""
        qa_files = dict(extra_test_files or {})
        for path in qa_files:
            if not path.startswith(QA_TEST_DIR + "/") or ".." in path.split("/"):
                raise SandboxError(f"scratch tests must live under {QA_TEST_DIR}/: {path}")
        with self.patched(qa_files):
            selected = list(nodeids) if nodeids is not None else None
            if wall_seconds is not None and wall_seconds < self.limits.wall_seconds:
                self._call_wall = wall_seconds
            if time_left is not None:
                self._deadline = time.monotonic() + max(1.0, time_left)
            try:
                # A whole-suite run with an added test file runs cold: the warm worker collected the suite without it.
                warm = warm and not coverage and not (selected is None and self.added_tests())
                return self._run_until_done(selected, stop_first, coverage, warm)
            finally:
                self._call_wall = None
                self._deadline = None

    # -- the behaviour probe ---------------------------------------------------------------------------
    def probe_calls(
        self,
        targets: Sequence[ProbeTarget],
        tests: Sequence[str],
        versions: Mapping[str, Mapping[str, str]],
        *,
        max_calls: int = PROBE_MAX_CALLS,
        max_variations: int = PROBE_MAX_VARIATIONS,
        call_seconds: float = PROBE_CALL_SECONDS,
    ) -> CallProbe:
        """Record the calls ``tests`` make to ``targets`` on the unpatched code, then replay them and their
        variations on the unpatched code twice ("before", "before again") and on each of ``versions`` (label:
        the patch's files). Every run is the project's interpreter in this sandbox (``plugin/selfix_calls.py``);
        what comes back is text only. A probe that cannot record or replay says why in ``note``; ``processes``
        counts the processes it ran (each a cold run in ``runs``, and in the heal's test runs)."""
        started = self.runs
        probe = self._probe_calls(targets, tests, versions, max_calls, max_variations, call_seconds)
        return probe.model_copy(update={"processes": self.runs - started})

    def _probe_calls(
        self,
        targets: Sequence[ProbeTarget],
        tests: Sequence[str],
        versions: Mapping[str, Mapping[str, str]],
        max_calls: int,
        max_variations: int,
        call_seconds: float,
    ) -> CallProbe:
        if not targets or not tests:
            return CallProbe(note="no function to probe" if not targets else "no test calls the edited code")
        spec_file = self._tmp / f"calls-spec-{self.runs}.json"
        recording = self._tmp / f"calls-{self.runs}.pickle"
        spec = {
            "targets": [_probe_target(self.root, t) for t in targets],
            "max_calls": max_calls,
            "out": str(recording),
        }
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        results_file = self._tmp / f"results-{self.runs}.jsonl"
        select = self._selection(tests)
        self.runs += 1
        env = {**self._env(results_file, False, select), "SELFIX_CALLS_SPEC": str(spec_file)}
        try:
            proc = run_process(
                [*self.test_cmd, *self._pytest_args([], False), "-p", "selfix_calls"],
                cwd=self.root,
                env=env,
                limits=self.limits,
                isolation=self.isolation,
                writable=(self._tmp,),
                hidden=self._hidden,
            )
            self._records(proc, results_file)
        except SandboxError as exc:
            return CallProbe(note=f"the tests could not run to record calls: {exc}")
        finally:
            if select is not None:
                select.unlink(missing_ok=True)
        summary = _json_object(Path(str(recording) + ".json"))
        python = str(summary.get("python", ""))
        calls = summary.get("calls")
        if not isinstance(calls, int) or not recording.is_file():
            return CallProbe(note="no call was recorded (the run ended before its end)")
        unpicklable = summary.get("unpicklable") if isinstance(summary.get("unpicklable"), int) else 0
        if calls == 0:
            why = f"; {unpicklable} had arguments that cannot be copied" if unpicklable else ""
            return CallProbe(
                note=f"the tests made no call of the edited functions that can be replayed{why}",
                unpicklable=int(unpicklable or 0),
            )
        if not (Path(python).is_absolute() and Path(python).is_file() and is_python(python)):
            return CallProbe(note=f"the tests' interpreter is unknown ({python[:80]!r})", recorded=calls)
        test_folders = sorted({str((self.root / t.split("::", 1)[0]).parent) for t in tests})
        replay_spec = {
            "targets": spec["targets"],
            "recording": str(recording),
            "paths": [p for p in test_folders if Path(p).is_dir()],
            "timeout": call_seconds,
            "max_variations": max_variations,
        }
        found: dict[str, tuple[ProbeLine, ...]] = {}
        runs = [("before", {}), ("before again", {}), *versions.items()]
        for label, files in runs:
            out = self._tmp / f"replay-{self.runs}-{len(found)}.jsonl"
            replay_spec["out"] = str(out)
            spec_file.write_text(json.dumps(replay_spec), encoding="utf-8")
            self.runs += 1  # a fresh process of the project's code, as a cold run is
            with self.patched(files):
                proc = run_process(
                    [python, str(PLUGIN_DIR / "selfix_calls.py"), "replay", str(spec_file)],
                    cwd=self.root,
                    env={**self._env(results_file, False), "PYTHONHASHSEED": "0"},
                    limits=self.limits,
                    isolation=self.isolation,
                    writable=(self._tmp,),
                    hidden=self._hidden,
                )
            self.test_seconds += proc.duration
            lines = _probe_lines(out)
            out.unlink(missing_ok=True)
            if not lines:
                why = "cut by its time limit" if proc.cut else f"exit {proc.returncode}: {_tail(proc, 6)}"
                return CallProbe(
                    versions=found,
                    recorded=calls,
                    unpicklable=int(unpicklable or 0),
                    note=f"the replay on {label} gave nothing ({why})",
                )
            found[label] = lines
        recording.unlink(missing_ok=True)
        return CallProbe(versions=found, recorded=calls, unpicklable=int(unpicklable or 0))

    def _wall(self, wall: float) -> float:
        """``wall``, or less when this call's deadline comes first."""
        if self._deadline is None:
            return wall
        return max(_MIN_RUN_SECONDS, min(wall, self._deadline - time.monotonic()))

    def _deadline_binds(self) -> bool:
        """Would this call's deadline cut a run started now before the run's own wall limit?"""
        wall = self._call_wall or self.limits.wall_seconds
        return self._deadline is not None and self._deadline - time.monotonic() < wall

    def _run_until_done(self, nodeids: list[str] | None, stop_first: bool, coverage: bool, warm: bool) -> TestRun:
        """Run; if a test hangs, record it as timed out and run the rest without it (bounded)."""
        if nodeids == []:
            return TestRun(error="no test was asked for")
        results: dict[str, TestResult] = {}
        coverage_data: dict[str, dict[str, list[int]]] | None = None
        note = ""
        started = time.monotonic()
        proc: ProcessResult | None = None
        timed_out = False
        deadline_reached = False
        collector = ""
        environment: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] = ((), ())
        python = ""
        limit = self.limits.wall_seconds
        for _attempt in range(_MAX_HANG_RETRIES + 1):
            pending = None if nodeids is None else [n for n in nodeids if n not in results]
            if pending == []:
                break
            if self._deadline is not None and self._deadline - time.monotonic() <= _MIN_RUN_SECONDS:
                deadline_reached = True
                break
            deadline_binds = self._deadline_binds()
            proc, records = self._run_once(pending, list(results), stop_first, coverage, warm)
            limit = proc.wall_limit or self.limits.wall_seconds
            hung = self._merge(records, results)
            for record in records:
                if record["event"] == "coverage" and isinstance(record.get("data"), dict):
                    try:
                        coverage_data = self._relative_coverage(record["data"], coverage_data)
                    except (TypeError, ValueError, AttributeError):
                        continue  # malformed coverage data: skipped
                    collector = self.coverage_collector = str(record.get("collector", ""))[:40]
                elif record["event"] == "coverage_unavailable" and isinstance(record.get("reason"), str):
                    note = record["reason"]
                elif record["event"] == "test_environment":
                    environment = _test_environment(record) or environment
                    python = _python_version(record) or python
            if not proc.cut:
                break
            timed_out = True
            if deadline_binds:
                deadline_reached = True  # the heal's time limit cut it: the test it was in did not hang
                break
            if hung is None or stop_first:
                break  # nothing to deselect, or the caller only wanted the first failure anyway
            results[hung] = TestResult(
                nodeid=hung,
                status=TestStatus.TIMEOUT,
                exc_type="Timeout",
                message=_cut_message(proc, limit, self.limits.cpu_seconds),
            )
        if coverage and coverage_data is None and not note:
            note = "no coverage data was produced"
        if proc is None:  # the deadline had passed before the first run
            return TestRun(timed_out=True, deadline_reached=True, error="the time limit was reached before this run")
        tail = _tail(proc, 40)
        return TestRun(
            results=results,
            coverage=coverage_data,
            coverage_note=note,
            coverage_collector=collector if coverage_data is not None else "",
            pytest_plugins=environment[0],
            root_fixtures=environment[1],
            python_version=python,
            timed_out=timed_out,
            deadline_reached=deadline_reached,
            returncode=proc.returncode,
            duration=time.monotonic() - started,
            output_tail=tail,
            error=_run_error(proc),
        )

    def _warm_server(self) -> ForkServer | None:
        """The warm worker, started on first use; None when the test command is not ``PY -m pytest``."""
        if self._fork_server is None and not self._fork_disabled:
            if self._pytest is None:
                self._fork_disabled = "the test command is not `<python> -m pytest ...`"
                return None
            env = self._env(self._tmp / "unused.jsonl", False)
            try:
                self._fork_server = ForkServer(
                    self._pytest[0],
                    self.root,
                    env,
                    self.limits,
                    isolation=self.isolation,
                    writable=(self._tmp,),
                    hidden=self._hidden,
                    interpreter_flags=self._pytest[1],
                )
            except ForkServerUnavailable as exc:
                self._fork_disabled = str(exc)
        return self._fork_server

    def _run_warm(
        self,
        args: list[str],
        nodeids: list[str] | None,
        select: Path | None,
        results_file: Path,
        coverage: bool,
        stop_first: bool,
    ) -> ProcessResult | None:
        """A hot check when the patch allows one, else a fork-per-run warm run; None: run it cold."""
        hot = self._run_hot(args, nodeids, results_file, coverage, stop_first)
        if hot is not None:
            return hot
        server = self._warm_server()
        if server is None:
            return None
        log = self._tmp / "warm.log"
        env = {
            "SELFIX_RESULTS": str(results_file),
            "SELFIX_COVERAGE": "1" if coverage else "0",
            "SELFIX_STOP_FIRST": "1" if stop_first else "0",
        }
        if select is not None:
            env["SELFIX_SELECT"] = str(select)
        started = time.monotonic()
        try:
            rest = self._pytest[2] if self._pytest is not None else []
            code, timed_out = server.run([*rest, *args], env, log, self._wall(self.limits.wall_seconds))
        except ForkServerUnavailable as exc:
            self._fork_server = None
            self._fork_disabled = str(exc)
            return None
        return worker_result("<warm worker>", [*args, *(nodeids or ())], code, timed_out, log, started)

    def start_hot_worker(self) -> bool:
        """Start the hot worker now (imports and collection) instead of at the first check; False if it cannot
        run here (``hot_unavailable`` says why)."""
        return self._hot_server() is not None

    @property
    def hot_unavailable(self) -> str:
        return self._hot_disabled

    def _hot_server(self) -> HotServer | None:
        """The hot worker, started on first use (inside the same isolation as every other run)."""
        if self._hot is None and not self._hot_disabled:
            if self._pytest is None:
                self._hot_disabled = "the test command is not `<python> -m pytest ...`"
                return None
            python, flags, rest, _ = self._pytest
            env = self._env(self._tmp / "hot-unused.jsonl", False)
            args = [*rest, "-p", "selfix_collector", "-p", "no:cacheprovider", "-q", "--tb=no"]
            # The worker must import the project as it is, not the candidate being checked when it starts:
            # module-level code may call a patched function at import time.
            in_effect = {rel: text for rel, text in self._current.items() if rel in self._originals}
            for rel in in_effect:
                self._write(rel, self._originals[rel])
            try:
                self._hot = HotServer(
                    python,
                    self.root,
                    env,
                    [*args, "--color=no"],
                    self.limits,
                    isolation=self.isolation,
                    writable=(self._tmp,),
                    hidden=self._hidden,
                    interpreter_flags=flags,
                )
            except ForkServerUnavailable as exc:
                self._hot_disabled = str(exc)
            finally:
                for rel, text in in_effect.items():
                    self._write(rel, text)
        return self._hot

    def _run_hot(
        self, args: list[str], nodeids: list[str] | None, results_file: Path, coverage: bool, stop_first: bool
    ) -> ProcessResult | None:
        deselect = any(a.startswith("--deselect=") for a in args)
        request = self._hot_request(nodeids, deselect, stop_first, results_file, coverage, self._current)
        server = self._hot_server() if request is not None else None
        if server is None or request is None:
            return None
        wall = self._limit_request(request, self._call_wall, self._tmp / "hot.log")
        started = time.monotonic()
        try:
            [(code, timed_out)] = server.exchange_many([request], wall)
        except ForkServerUnavailable as exc:
            self._hot, self._hot_disabled = None, str(exc)
            return None
        return self._hot_result([*args, *request["nodeids"]], request, code, timed_out, started, self._call_wall)

    def _limit_request(self, request: dict, call_wall: float | None, log: Path) -> float:
        """Set a hot request's log, wall limit and (under an adaptive wall limit) CPU limit; the wall limit."""
        request["log"] = str(log)
        wall = self._wall(call_wall or self.limits.wall_seconds)
        request["timeout"] = wall
        if call_wall is not None:
            # The CPU limit cut to match: a runaway dies at the wall limit or its CPU time, whichever comes first.
            cpu = self.limits.cpu_seconds
            request["cpu_seconds"] = max(1, math.ceil(wall)) if cpu is None else min(cpu, max(1, math.ceil(wall)))
        return wall

    def _hot_result(
        self, args: list[str], request: dict, code: int | None, timed_out: bool, started: float, call_wall: float | None
    ) -> ProcessResult | None:
        """The hot child's run as a process result; None when the worker could not take it (run it otherwise)."""
        if code in (UNSWAPPABLE, UNKNOWN_TEST):
            Path(request["results"]).unlink(missing_ok=True)
            return None
        self.hot_runs += 1
        return worker_result("<hot worker>", args, code, timed_out, Path(request["log"]), started, call_wall)

    def _hot_request(
        self,
        nodeids: Sequence[str] | None,
        deselect: bool,
        stop_first: bool,
        results_file: Path,
        coverage: bool,
        current: Mapping[str, str],
    ) -> dict | None:
        """The hot worker's request for this run with the patch ``current`` in effect, or None when the patch or
        the selection needs a fresh import."""
        if coverage or deselect or not nodeids:
            return None
        if any("::" not in n for n in nodeids):
            return None  # whole files or directories (QA test files): not among the collected items
        if set(current) - set(self._originals):
            return None  # a new file
        wanted = {rel: current.get(rel, original) for rel, original in self._originals.items()}
        for rel, text in wanted.items():
            base = self._skeletons.get(rel)
            if base is None or (text != self._originals[rel] and skeleton(text) != base):
                return None  # a module-level, signature or new-file change: needs a fresh import
        changed = [rel for rel, text in wanted.items() if text != self._originals[rel]]
        return {
            # The worker holds the unpatched project and each check is a fresh fork of it: only changed files.
            "files": {str(self._path(rel)): wanted[rel] for rel in changed},
            # Before Python 3.11 the worker matches definitions by compiling the unpatched source as well.
            "originals": {str(self._path(rel)): self._originals[rel] for rel in changed},
            "nodeids": list(nodeids),
            "stop_first": stop_first,
            "results": str(results_file),
        }

    def _empty_cache(self) -> None:
        """Empty the tests' ``~/.cache`` before a run (or a batch of candidate checks).

        A CI job runs the suite once, on a fresh runner; selfix runs it for every candidate with the same private
        home. A cache one run left there was read by the next: black's cache of formatted files made each
        candidate after the first report "1 file left unchanged" and fail a sound fix. The home starts empty
        (the setup command has its own), so nothing a run needs is lost; the rest of the home is kept."""
        cache = Path(self._private_env["XDG_CACHE_HOME"])
        for entry in list(cache.iterdir()) if cache.is_dir() else ():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    @staticmethod
    def _pytest_args(deselect: Sequence[str], stop_first: bool) -> list[str]:
        """The options selfix adds to the test command; the tests themselves go through ``_selection``."""
        args = ["-p", "selfix_collector", "-p", "no:cacheprovider", "-q", "--tb=short", "--color=no"]
        if stop_first:
            args.append("-x")
        for nodeid in deselect:
            args.append(f"--deselect={nodeid}")
        return args

    def _selection(self, nodeids: Sequence[str] | None) -> Path | None:
        """The file that tells the collector plugin which tests to run (None: the suite as the command has it)."""
        if nodeids is None:
            return None
        path = self._tmp / f"select-{self.runs}.json"
        path.write_text(json.dumps(list(nodeids)), encoding="utf-8")
        return path

    def _run_once(
        self, nodeids: list[str] | None, deselect: list[str], stop_first: bool, coverage: bool, warm: bool
    ) -> tuple[ProcessResult, list[dict]]:
        results_file = self._tmp / f"results-{self.runs}.jsonl"
        args = self._pytest_args(deselect, stop_first)
        select = self._selection(nodeids)
        self.runs += 1
        self._empty_cache()
        try:
            proc = self._run_warm(args, nodeids, select, results_file, coverage, stop_first) if warm else None
            if proc is not None:
                self.warm_runs += 1
            else:
                proc = run_process(
                    [*self.test_cmd, *args],
                    cwd=self.root,
                    env=self._env(results_file, coverage, select, stop_first),
                    limits=dataclasses.replace(self.limits, wall_seconds=self._wall(self.limits.wall_seconds)),
                    isolation=self.isolation,
                    writable=(self._tmp,),
                    hidden=self._hidden,
                )
        finally:
            if select is not None:
                select.unlink(missing_ok=True)
        return proc, self._records(proc, results_file)

    def _records(self, proc: ProcessResult, results_file: Path) -> list[dict]:
        """The collector's records of a finished run (the file is consumed); SandboxError if no test ran."""
        self.test_seconds += proc.duration
        records = []
        if results_file.exists():
            for line in results_file.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, RecursionError):
                    continue  # a line cut short by a kill
                # The code under test can write this file too: keep only records of the right basic shape.
                if isinstance(record, dict) and isinstance(record.get("event"), str):
                    records.append(record)
                    if record["event"] == "config_overrides":
                        self._note_overrides(record.get("notes"))
            results_file.unlink()
        if not records and proc.returncode not in (0, 5) and not proc.cut:
            unsupported = self._unsupported_interpreter()
            if unsupported:
                raise SandboxError(unsupported)
            raise SandboxError(
                f"the test command failed before running any test (exit {proc.returncode}):\n{_tail(proc, 15)}"
            )
        return records

    def _note_overrides(self, notes: object) -> None:
        """Add a run's reported overrides (checked: it is the project's process talking) to ``config_overrides``."""
        if isinstance(notes, list):
            found = (str(note)[:200] for note in notes[:20] if isinstance(note, str))
            self.config_overrides = tuple(dict.fromkeys((*self.config_overrides, *found)))[:20]

    def _unsupported_interpreter(self) -> str:
        """Why the test command's Python cannot run selfix's plugins, when that is why no test ran ("" if not)."""
        if self._pytest is None:
            return ""  # not a `<python> -m pytest` command: its interpreter is not known
        probe = run_process(
            [self._pytest[0], "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            cwd=self.root,
            env=sandbox_env(self._env_source, extra=self._private_env),
            limits=dataclasses.replace(self.limits, wall_seconds=30),
            isolation=self.isolation,
            writable=(self._tmp,),
            hidden=self._hidden,
        )
        try:
            version = tuple(int(part) for part in probe.stdout.strip().split("."))
        except ValueError:
            return ""
        if version >= OLDEST_PROJECT_PYTHON:
            return ""
        oldest = ".".join(map(str, OLDEST_PROJECT_PYTHON))
        return (
            f"the test command's interpreter is Python {probe.stdout.strip()}, which selfix does not support: its "
            f"pytest plugins run inside the project's interpreter and need Python {oldest} or newer "
            f"({self.test_cmd[0]}); point --test-cmd (the action's test_command) at a newer interpreter"
        )

    # -- several candidates at once ------------------------------------------------------------------
    def prepare_hypothesis(self) -> PropertyLibrary:
        """Hypothesis for property tests, once per sandbox: the project's own when its interpreter imports it,
        else selfix's cached copy for that Python version (installed on first use), copied into the scratch area
        (the runs cannot see the user's home); unavailable with the reason. Never raises."""
        if self._hypothesis is None:
            self._hypothesis = self._find_hypothesis()
        return self._hypothesis

    def _find_hypothesis(self) -> PropertyLibrary:
        if self._pytest is None:
            return PropertyLibrary(note="the test command is not `<python> -m pytest ...`: its interpreter is unknown")
        pythonpath = [str(self.root), *(str(f) for f in self._editable)]
        if (self.root / "src").is_dir():
            pythonpath.insert(1, str(self.root / "src"))
        try:
            probe = run_process(
                [self._pytest[0], *self._pytest[1], "-c", hypothesis_lib.PROBE],
                cwd=self.root,
                env=sandbox_env(
                    self._env_source, extra={**self._private_env, "PYTHONPATH": os.pathsep.join(pythonpath)}
                ),
                limits=dataclasses.replace(self.limits, wall_seconds=30),
                isolation=self.isolation,
                writable=(self._tmp,),
                hidden=self._hidden,
            )
        except SandboxError as exc:
            return PropertyLibrary(note=f"the project's interpreter could not be asked for Hypothesis: {exc}")
        answer = hypothesis_lib.parse_probe(probe.stdout)
        if answer is None:
            return PropertyLibrary(note="the project's interpreter did not say its version")
        version, in_project = answer
        if in_project:
            return PropertyLibrary(in_project=True, python=version)
        folder, why = hypothesis_lib.cached_install(version, self._hypothesis_cache, self._env_source)
        if folder is None:
            return PropertyLibrary(python=version, note=f"Hypothesis is not installed for the project and {why}")
        copy = self._tmp / "hypothesis-lib"
        try:
            if not copy.is_dir():
                shutil.copytree(folder, copy, symlinks=False)
        except OSError as exc:
            return PropertyLibrary(python=version, note=f"Hypothesis could not be copied into the sandbox: {exc}")
        return PropertyLibrary(path=str(copy), python=version)

    def check_candidates(self, checks: Sequence[CandidateCheck]) -> list[TestRun]:
        """Each check's tests on its own patched files, stopping at the first failure, one run per check.

        Checks the hot worker can take run at once, ``parallel_checks`` at a time (one forked child each, so
        several cores); the others run one after the other through ``patched`` + ``run_tests(warm=True)``. A
        check whose tests could not run at all comes back as a run without results, the reason as its output.
        """
        runs: dict[int, TestRun] = {}
        hot: list[tuple[int, list[str], dict]] = []
        self._empty_cache()
        for index, check in enumerate(checks):
            self._remember(check.files)
            args = self._pytest_args((), True)
            results_file = self._tmp / f"results-{self.runs}-{index}.jsonl"
            request = self._hot_request(check.nodeids, False, True, results_file, False, check.files)
            if request is not None and not self._current and self._hot_server() is not None:
                self._limit_request(request, check.wall_seconds, self._tmp / f"hot-{index}.log")
                hot.append((index, [*args, *check.nodeids], request))
        width = max(1, self.parallel_checks)
        for first in range(0, len(hot), width):
            chunk = hot[first : first + width]
            started = time.monotonic()
            try:
                assert self._hot is not None
                replies = self._hot.exchange_many([r for _, _, r in chunk], max(r["timeout"] for _, _, r in chunk))
            except ForkServerUnavailable as exc:
                self._hot, self._hot_disabled = None, str(exc)
                break
            for (index, args, request), (code, timed_out) in zip(chunk, replies, strict=True):
                proc = self._hot_result(args, request, code, timed_out, started, checks[index].wall_seconds)
                if proc is None:
                    continue  # the worker could not swap it in: it runs the ordinary way below
                self.runs += 1
                self.warm_runs += 1
                try:
                    records = self._records(proc, Path(request["results"]))
                except SandboxError as exc:
                    runs[index] = TestRun(output_tail=str(exc), error=str(exc))
                    continue
                results: dict[str, TestResult] = {}
                self._merge(records, results)
                runs[index] = TestRun(
                    results=results,
                    timed_out=proc.cut,
                    returncode=proc.returncode,
                    duration=proc.duration,
                    output_tail=_tail(proc, 40),
                )
        for index, check in enumerate(checks):
            if index not in runs:
                try:
                    with self.patched(check.files):
                        runs[index] = self.run_tests(
                            list(check.nodeids), stop_first=True, warm=True, wall_seconds=check.wall_seconds
                        )
                except SandboxError as exc:
                    runs[index] = TestRun(output_tail=str(exc), error=str(exc))
        return [runs[index] for index in range(len(checks))]

    def _merge(self, records: list[dict], results: dict[str, TestResult]) -> str | None:
        """Add finished tests to ``results``; return the test that started but never finished, if any."""
        unfinished = None
        for record in records:
            nodeid = record.get("nodeid")
            if not isinstance(nodeid, str) or not nodeid:
                continue  # malformed: skipped
            if record["event"] == "start":
                unfinished = nodeid
            elif record["event"] == "result":
                try:
                    frames = record.get("frames", [])
                    if not isinstance(frames, list):
                        raise TypeError("frames is not a list")
                    result = TestResult(
                        nodeid=nodeid,
                        status=TestStatus(record["status"]),  # none: KeyError, skipped as malformed
                        duration=record.get("duration", 0.0),
                        exc_type=record.get("exc_type", ""),
                        message=record.get("message", ""),
                        frames=tuple(self._project_frames(frames)),
                        address=str(record.get("address", ""))[:300],
                    )
                except (ValidationError, ValueError, TypeError, KeyError, AttributeError):
                    continue  # malformed: skipped
                results[nodeid] = result
                if nodeid == unfinished:
                    unfinished = None
        return unfinished

    def _relative(self, filename: str) -> str | None:
        try:
            rel = Path(os.path.realpath(filename)).relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return None
        return None if is_ignored_path(rel) else rel

    def _project_frames(self, frames: list[dict]) -> Iterator[Frame]:
        for frame in frames:
            rel = self._relative(frame["file"])
            if rel is not None:
                yield Frame(file=rel, line=frame["line"], function=frame["function"], code=frame.get("code", ""))

    def _relative_coverage(
        self, data: dict[str, dict[str, list[int]]], into: dict[str, dict[str, list[int]]] | None
    ) -> dict[str, dict[str, list[int]]]:
        merged = into or {}
        for nodeid, files in data.items():
            for filename, lines in files.items():
                rel = self._relative(filename)
                if rel is not None and not rel.startswith(QA_TEST_DIR + "/"):
                    merged.setdefault(nodeid, {})[rel] = sorted(lines)
        return merged


# setuptools' editable finder names each package's folder in a MAPPING dict of quoted absolute paths.
_QUOTED_PATH = re.compile(r"""['"](/[^'"\n]+)['"]""")


def editable_folders(python: str, repo: Path, copy: Path) -> tuple[Path, ...]:
    """The folders of ``copy`` that stand for what the interpreter's editable installs point at in ``repo``:
    a ``.pth`` file's path lines, and the package folders of setuptools' editable finders (their parents go on
    ``sys.path``). Read from the virtual environment of ``python``, when it is one; nothing is imported."""
    venv = Path(python).parent.parent
    if not (venv / "pyvenv.cfg").is_file():
        return ()
    found: list[Path] = []
    for site in sorted(venv.glob("lib/python*/site-packages")):
        for pth in sorted(site.glob("*.pth")):
            for line in _text(pth).splitlines():
                if line.strip() and not line.startswith(("#", "import ")):
                    found.append(Path(line.strip()))
        for finder in sorted(site.glob("__editable__*finder.py")):
            found += [Path(path).parent for path in _QUOTED_PATH.findall(_text(finder))]
    mapped: list[Path] = []
    for path in found:
        if path.is_absolute() and path.is_relative_to(repo) and path != repo:
            inside = copy / path.relative_to(repo)
            if inside.is_dir() and inside not in mapped:
                mapped.append(inside)
    return tuple(mapped)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return ""


# Interpreter options that take their argument as the next word (or attached: -Werror, -Xdev).
_FLAGS_WITH_ARGUMENT = ("-W", "-X")
_PYTHON_NAME = re.compile(r"python[0-9.]*(\.exe)?")


def is_python(program: str | Path) -> bool:
    """Whether ``program`` names a Python interpreter (``python``, ``python3.12``, a venv's ``bin/python``)."""
    return bool(_PYTHON_NAME.fullmatch(Path(program).name))


def pytest_command(argv: Sequence[str]) -> tuple[str, list[str], list[str], tuple[str, ...]] | None:
    """``<python> [flags] -m pytest ARGS`` as (python, flags, ARGS, notes), or None for another command.

    The flags are the project's (``-bb``, ``-Werror``, ``-X dev``, ...) and stay, except the two that would make
    the interpreter ignore ``PYTHONPATH``, through which selfix's plugins and the scratch copy come first on
    ``sys.path``: ``-I`` becomes ``-s`` (its part that stays meaningful: no user site-packages) and ``-E`` goes;
    the environment is selfix's allowlist either way. ``notes`` say what was changed."""
    if len(argv) < 3 or not is_python(argv[0]):
        return None
    flags: list[str] = []
    changed: list[str] = []
    words = list(argv[1:])
    while words:
        word = words.pop(0)
        if word == "-m":
            if not words or words[0] != "pytest":
                return None
            notes = (
                (
                    f"the test command's interpreter options {' '.join(changed)} (selfix's plugins and the "
                    "scratch copy reach the tests through PYTHONPATH)",
                )
                if changed
                else ()
            )
            return argv[0], flags, words[1:], notes
        if word in _FLAGS_WITH_ARGUMENT:
            if not words:
                return None
            flags += [word, words.pop(0)]
        elif word.startswith(_FLAGS_WITH_ARGUMENT):
            flags.append(word)
        elif word.startswith("-") and not word.startswith("--") and word[1:].isalpha():
            letters = word[1:]
            kept = letters.replace("I", "s").replace("E", "")
            if kept != letters:
                changed.append(f"{word} -> {'-' + kept if kept else '(none)'}")
            if kept:
                flags.append("-" + kept)
        else:
            return None  # a script, -c, or an option this reading does not know: the command as given
    return None


def _run_error(proc: ProcessResult) -> str:
    """Why pytest could not report on the tests it was given ("" for a run that passed or failed tests, or was cut
    by a timeout: a test it never reached has no result, and no result never reads as passed)."""
    if proc.cut:
        return ""
    trouble = _PYTEST_TROUBLE.get(proc.returncode) if proc.returncode is not None else None
    return f"{trouble}: {_tail(proc, 8)}" if trouble else ""


def _cut_message(proc: ProcessResult, wall: float, cpu_seconds: int | None) -> str:
    """Why the test a run was cut in has no result of its own: the wall limit, or the CPU-time limit."""
    if not proc.cpu_limited:
        return f"killed after {wall:g}s wall-clock limit"
    if proc.wall_limit is not None:  # an adaptive check: its CPU limit follows its wall limit (``_limit_request``)
        adaptive = max(1, math.ceil(proc.wall_limit))
        cpu_seconds = adaptive if cpu_seconds is None else min(cpu_seconds, adaptive)
    return f"killed at its {cpu_seconds}s CPU-time limit" if cpu_seconds else "killed at its CPU-time limit"


def _tail(proc: ProcessResult, lines: int) -> str:
    return "\n".join((proc.stdout + "\n" + proc.stderr).strip().splitlines()[-lines:])


def _probe_target(root: Path, target: ProbeTarget) -> dict[str, object]:
    return {
        "id": target.id,
        "file": str(root / target.path),
        "name": target.name,
        "qualname": target.qualname,
        "first": target.first,
        "last": target.last,
    }


def _json_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8", errors="replace")[:100_000])
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _probe_lines(path: Path) -> tuple[ProbeLine, ...]:
    """A replay's lines, checked: the project's process wrote them, so only well-formed bounded strings count."""
    if not path.is_file():
        return ()
    lines: list[ProbeLine] = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines()[:_PROBE_LINES]:
        try:
            record = json.loads(raw)
            lines.append(
                ProbeLine(
                    target=str(record["target"])[:_PROBE_TEXT],
                    call=int(record["call"]),
                    variation=str(record["variation"])[:200],
                    text=str(record["text"])[:_PROBE_TEXT],
                    test=str(record["test"])[:_PROBE_TEXT],
                    outcome=str(record["outcome"])[:_PROBE_TEXT],
                )
            )
        except (ValueError, KeyError, TypeError, RecursionError, ValidationError):
            continue
    return tuple(lines)
