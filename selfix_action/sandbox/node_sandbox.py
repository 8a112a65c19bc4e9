"""Run a Node project's tests (jest, vitest, mocha, node's test runner) on a scratch copy: the JavaScript and
TypeScript half of the sandbox, behind the same ``Sandbox`` protocol as ``PytestSandbox``.

Every run goes through ``process.run_process`` with the same isolation, limits and allowlisted environment as
pytest's: no network, no secret, the repository and the caller's home hidden. Dependencies are the workflow's
business: ``node_modules`` is copied with the project (or from the nearest folder above it that has one, a
workspace's root) and nothing is ever installed or fetched here.

A test is named ``<spec file>::<title> > <title> > ...`` (the describe blocks, then the test). Results come
from selfix's own reporters where the runner takes one (``node_plugin/``: mocha's, with per-test V8 coverage
taken in the test process, and node's test runner's), from jest's ``--json`` and from vitest's JUnit report.
A QA test (``_selfix_qa/<path>``) is written at ``<path>`` in the copy, beside the tests whose imports it
copies, and its results are named back under ``_selfix_qa/``.
"""

from __future__ import annotations

import bisect
import dataclasses
import glob
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selfix_action.errors import InputError, SandboxError
from selfix_action.junit import JUnitError, Outcome, parse_report
from selfix_action.repair.languages import JS_SUFFIXES, TS_SUFFIXES, instrument_node_calls
from selfix_action.repair.patches import text_lines
from selfix_action.repair.paths import QA_TEST_DIR, is_node_source_path
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
from selfix_action.sandbox import scratch
from selfix_action.sandbox.isolation import Isolation, former_home
from selfix_action.sandbox.process import Limits, ProcessResult, memory_cap, private_dirs, run_process, sandbox_env
from selfix_action.toolchains.node import NodeProject, NodeTestName, node_test_id, split_test_id

PLUGIN_DIR = Path(__file__).resolve().parent / "node_plugin"
MOCHA_REPORTER = "selfix_mocha_reporter.js"
NODE_REPORTER = "selfix_node_reporter.mjs"
CALLS_RECORDER = "selfix_calls.js"
# The behaviour probe's bounds: distinct inputs watched per function, variations run per input.
PROBE_MAX_CALLS = 20
PROBE_MAX_VARIATIONS = 16
PROBED_RUNNERS = ("mocha", "jest", "vitest")
SYNTAX_CHECK_SECONDS = 60.0
COVERED_FAILING = 4  # failing tests run alone with coverage (runners other than mocha)
COVERED_PASSING = 8  # passing tests of the same spec files run alone with coverage
_FRAME = re.compile(
    r"^\s*at (?:(?P<function>.+?) \()?(?P<path>(?:file://)?[^\s()]+?):(?P<line>\d+):(?P<col>\d+)\)?\s*$"
)
_STATUS = {"passed": TestStatus.PASSED, "failed": TestStatus.FAILED, "error": TestStatus.ERROR}
_COPY_SKIPPED = frozenset({".git", ".hg", ".svn", ".selfix", ".nyc_output", "coverage"})


def _copy_ignore(directory: str, names: list[str]) -> set[str]:
    return {name for name in names if name in _COPY_SKIPPED}


# One runner invocation: the files named to it, the tests selected in them (none: all), and whether the command's
# own spec files run too.
_Invocation = tuple[list[str], list[NodeTestName], bool]


class NodeSandbox:
    """A scratch copy of a Node project and the means to run its tests there."""

    def __init__(
        self,
        repo: Path,
        test_cmd: Sequence[str],
        project: NodeProject,
        *,
        limits: Limits | None = None,
        env_source: Mapping[str, str] | None = None,
        scratch_parent: Path | None = None,
        isolation: Isolation | None = None,
    ) -> None:
        self.repo = repo.resolve()
        if not self.repo.is_dir():
            raise InputError(f"not a directory: {repo}")
        if not test_cmd:
            raise InputError("the test command is empty")
        self.project = project
        self.runner = project.runner
        wanted = limits or Limits()
        self.memory = memory_cap(wanted.memory_bytes, 1)
        # V8 reserves address space far beyond what it uses (a WebAssembly memory reserves 10 GiB; vitest's
        # parser is one), so RLIMIT_AS would kill node at start: node's heap is bounded instead
        # (--max-old-space-size in NODE_OPTIONS, the memory cap's share).
        self.limits = dataclasses.replace(wanted, memory_bytes=None)
        self._heap_mib = max(256, (self.memory.bytes or 4 * 1024**3) // (1024 * 1024) * 3 // 4)
        self.isolation = isolation
        self._env_source = dict(os.environ if env_source is None else env_source)
        self._tmp = Path(tempfile.mkdtemp(prefix="selfix-node-", dir=scratch_parent))
        self.root = self._tmp / "repo"
        shutil.copytree(self.repo, self.root, ignore=_copy_ignore, symlinks=True)
        if not (self.root / "node_modules").is_dir():
            # A workspace package: its dependencies are hoisted to the workspace's root, which node finds by
            # walking up from the package, as it would from packages/x in CI.
            outer = _outer_node_modules(self.repo)
            if outer is not None:
                shutil.copytree(outer, self._tmp / "node_modules", symlinks=True)
        self._plugin = self._tmp / "plugin"
        shutil.copytree(PLUGIN_DIR, self._plugin)
        self._private_env = private_dirs(self._tmp)
        self._hidden = (self.repo, *former_home(self._env_source, (self._tmp,)))
        self.command = runner_command(
            [_in_copy(arg, self.repo, self.root) for arg in test_cmd],
            self.root,
            self.runner,
            self._env_source.get("PATH"),
        )
        self.parallel_checks = 1
        self.runs = 0
        self.warm_runs = 0
        self.hot_runs = 0
        self.config_overrides: tuple[str, ...] = ()
        self._node = shutil.which("node", path=self._env_source.get("PATH"))
        self.toolchain = self._describe_toolchain()
        self._names: dict[str, NodeTestName] = {}
        self._coverage_sample: tuple[str, ...] | None = None
        self._qa: dict[str, str] = {}  # physical path in the copy -> its _selfix_qa/ name

    def _describe_toolchain(self) -> str:
        """ "mocha 10.8.2 on Node v20.20.2": what the prompts tell the model its code must run on."""
        package = None if self.runner == "node" else self.runner
        runner = "node's test runner" if package is None else package
        if package is not None:
            for folder in (self.root, self._tmp):
                try:
                    manifest = json.loads((folder / "node_modules" / package / "package.json").read_text("utf-8"))
                    runner = f"{package} {manifest.get('version', '')}".strip()
                    break
                except (OSError, ValueError, AttributeError):
                    continue
        version = ""
        if self._node is not None:
            version = self._run([self._node, "--version"], SYNTAX_CHECK_SECONDS).stdout.strip()
        return f"{runner} on Node {version}" if version else runner

    # -- lifetime ---------------------------------------------------------------------------------------------
    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> NodeSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def limits_report(self) -> dict[str, object]:
        return scratch.limits_report(self.limits, self.memory, self.isolation, 1)

    # -- files ------------------------------------------------------------------------------------------------
    def _path(self, rel: str) -> Path:
        return scratch.inside(self.root, rel)

    def read_file(self, path: str) -> str:
        return scratch.read_text(self.root, path)

    def source_files(self) -> list[str]:
        return scratch.source_files(self.root, is_node_source_path)

    @contextmanager
    def patched(self, files: Mapping[str, str]) -> Iterator[None]:
        originals: dict[str, str | None] = {}
        try:
            for rel, text in files.items():
                path = self._path(rel)
                originals[rel] = path.read_text(encoding="utf-8") if path.exists() else None
                path.parent.mkdir(parents=True, exist_ok=True)
                self._write(path, text)
            yield
        finally:
            for rel, original in originals.items():
                if original is None:
                    self._path(rel).unlink(missing_ok=True)
                else:
                    self._write(self._path(rel), original)

    @staticmethod
    def _write(path: Path, text: str) -> None:
        scratch.write_text(path, text)

    # -- what Python alone has --------------------------------------------------------------------------------
    def prepare_hypothesis(self) -> PropertyLibrary:
        return PropertyLibrary(note="property tests run on Python's Hypothesis: none for a JavaScript project")

    # -- the behaviour probe ---------------------------------------------------------------------------------
    def probe_calls(
        self, targets: Sequence[ProbeTarget], tests: Sequence[str], versions: Mapping[str, Mapping[str, str]]
    ) -> CallProbe:
        """The edited functions watched while ``tests`` run, once per version of the code: the unpatched code
        twice ("before", "before again"), then each of ``versions``. Each function's text is routed through
        selfix's recorder (``languages.instrument_node_calls``, ``node_plugin/selfix_calls.js``), which writes
        every distinct input with its outcome, and the outcomes of variations of it, run by that version's own
        code. In place, not replayed elsewhere: a JavaScript object's class lives in the code that made it. Each
        call's test comes from selfix's mocha reporter, or from jest's and vitest's expect state; node's runner
        keeps none, and there the probe says why it did not run."""
        started = self.runs
        probe = self._probe_calls(targets, tests, versions)
        return probe.model_copy(update={"processes": self.runs - started})

    def _probe_calls(
        self, targets: Sequence[ProbeTarget], tests: Sequence[str], versions: Mapping[str, Mapping[str, str]]
    ) -> CallProbe:
        if not targets or not tests:
            return CallProbe(note="no function to probe" if not targets else "no test calls the edited code")
        if self.runner not in PROBED_RUNNERS:
            # node's runner runs each file in a child of its own and keeps no state a call could name its test by
            why = "the behaviour probe names the test of each call under mocha, jest and vitest: not node's runner"
            return CallProbe(note=why)
        names = [self._names.get(t) or split_test_id(t) for t in tests if not t.startswith(QA_TEST_DIR + "/")]
        names = [n for n in names if n.titles]
        if not names:
            return CallProbe(note="no project test calls the edited code")
        files = [f for f in dict.fromkeys(n.file for n in names) if f]
        found: dict[str, tuple[ProbeLine, ...]] = {}
        notes: list[str] = []
        recorded = 0
        for label, version in [("before", {}), ("before again", {}), *versions.items()]:
            watched: dict[str, str] = {}
            for path in dict.fromkeys(t.path for t in targets):
                text = version[path] if path in version else self.read_file(path)
                wanted = [(t.id, t.qualname, t.first) for t in targets if t.path == path]
                watched[path], skipped = instrument_node_calls(path, text, wanted)
                if label == "before":
                    notes += [f"{target.rsplit(':', 1)[-1]} not watched: {why}" for target, why in skipped.items()]
            out = self._tmp / f"calls-{self.runs + 1}.jsonl"
            out.unlink(missing_ok=True)
            env = {
                "SELFIX_CALLS_OUT": str(out),
                "SELFIX_CALLS_MAX": str(PROBE_MAX_CALLS),
                "SELFIX_CALLS_VARIATIONS": str(PROBE_MAX_VARIATIONS),
                "SELFIX_CALLS_TESTS": json.dumps([[n.file, list(n.titles)] for n in names]),
                "NODE_OPTIONS": f"--max-old-space-size={self._heap_mib} --require {self._plugin / CALLS_RECORDER}",
            }
            with self.patched({**version, **watched}):
                run = self._run_once(files, names, self.limits.wall_seconds, False, False, extra_env=env)
            lines = _probe_lines(out)
            out.unlink(missing_ok=True)
            if not lines:
                why = "cut by its time limit" if run.timed_out else run.error or "no call of the edited functions"
                note = "; ".join([f"the tests under {label} recorded nothing ({why[:300]})", *notes])
                return CallProbe(versions=found, recorded=recorded, note=note)
            if label == "before":
                recorded = len({line.call for line in lines if line.variation == "as recorded"})
            found[label] = lines
        return CallProbe(versions=found, recorded=recorded, note="; ".join(notes))

    # -- runs -------------------------------------------------------------------------------------------------
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
        wall = min(wall_seconds or self.limits.wall_seconds, self.limits.wall_seconds)
        if time_left is not None:
            wall = max(1.0, min(wall, time_left))
        qa = {self._qa_path(name): text for name, text in (extra_test_files or {}).items()}
        with self.patched(qa):
            groups = self._groups(nodeids, list(qa))
            results: dict[str, TestResult] = {}
            coverage_map: dict[str, dict[str, list[int]]] = {}
            total = TestRun()
            for files, names, own_specs in groups:
                run = self._run_once(
                    files, names, wall, coverage and self.runner == "mocha", stop_first, own_specs=own_specs
                )
                results.update(run.results)
                coverage_map.update(run.coverage or {})
                total = run if not total.output_tail else total
                if run.timed_out or run.error:
                    total = run
        wanted = None if nodeids is None else set(nodeids)
        if wanted is not None:
            results = {n: r for n, r in results.items() if _asked(n, wanted)}
        note = ""
        if coverage and self.runner != "mocha":
            coverage_map, note = self._coverage_alone(results, wall)
        return total.model_copy(
            update={
                "results": results,
                "coverage": coverage_map if coverage and coverage_map else None,
                "coverage_note": note if coverage else "",
                "coverage_collector": "v8" if coverage_map else "",
                "toolchain": self.toolchain,
            }
        )

    def _coverage_alone(
        self, results: Mapping[str, TestResult], wall: float
    ) -> tuple[dict[str, dict[str, list[int]]], str]:
        """Per-test coverage where the runner's tests do not run in a process selfix's reporter lives in (jest's
        and vitest's workers, node's per-file children): the failing tests, and passing tests of their files,
        each run alone with V8's coverage (``NODE_V8_COVERAGE``, or jest's and vitest's own v8 provider, which
        map their transformed code back to the source). A sample: ``COVERED_FAILING`` failing and
        ``COVERED_PASSING`` passing tests."""
        if self.runner == "vitest" and not (self.root / "node_modules" / "@vitest" / "coverage-v8").is_dir():
            return {}, "no per-test coverage with vitest without @vitest/coverage-v8: the stack traces rank"
        if self._coverage_sample is None:
            # Chosen once, on the baseline: a later coverage run (the patched copy's) measures the same tests, so
            # what the patch changes in them can be compared.
            failing = [n for n, r in results.items() if not r.ok and "::" in n][:COVERED_FAILING]
            files = {n.partition("::")[0] for n in failing}
            passing = [n for n, r in results.items() if r.ok and n.partition("::")[0] in files][:COVERED_PASSING]
            self._coverage_sample = (*failing, *passing)
        covered: dict[str, dict[str, list[int]]] = {}
        for nodeid in self._coverage_sample:
            name = self._names.get(nodeid) or split_test_id(nodeid)
            lines = self._covered_alone(name, wall)
            if lines:
                covered[nodeid] = lines
        if not covered:
            return {}, f"no per-test coverage with {self.runner}: the stack traces rank"
        return covered, ""

    def _covered_alone(self, name: NodeTestName, wall: float) -> dict[str, list[int]]:
        folder = self._tmp / f"coverage-{self.runs + 1}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        extra: list[str] = []
        if self.runner == "jest":
            extra = ["--coverage", "--coverageProvider=v8", "--coverageReporters=json", f"--coverageDirectory={folder}"]
        elif self.runner == "vitest":
            extra = [
                "--coverage.enabled=true",
                "--coverage.provider=v8",
                "--coverage.reporter=json",
                f"--coverage.reportsDirectory={folder}",
            ]
        env = {"NODE_V8_COVERAGE": str(folder)} if self.runner == "node" else {}
        self._run_once([name.file] if name.file else [], [name], wall, False, False, extra, env)
        if self.runner == "node":
            return self._v8_lines(folder)
        return self._istanbul_lines(folder / "coverage-final.json")

    def _v8_lines(self, folder: Path) -> dict[str, list[int]]:
        ranges: dict[str, list[list[int]]] = {}
        for dump in folder.glob("coverage-*.json"):
            try:
                scripts = json.loads(dump.read_text(encoding="utf-8")).get("result", [])
            except (OSError, ValueError):
                continue
            for script in scripts:
                rel = _relative(str(script.get("url", "")), self.root)
                if rel is None or rel.startswith("/") or "node_modules" in rel.split("/") or ":" in rel:
                    continue
                for function in script.get("functions", []):
                    for item in function.get("ranges", []):
                        ranges.setdefault(rel, []).append([item["startOffset"], item["endOffset"], item["count"]])
        return self._lines(ranges)

    def _istanbul_lines(self, report: Path) -> dict[str, list[int]]:
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        covered: dict[str, list[int]] = {}
        for path, entry in data.items():
            rel = _relative(str(entry.get("path", path)), self.root)
            if rel is None or rel.startswith("/") or "node_modules" in rel.split("/"):
                continue
            statements = entry.get("statementMap", {})
            lines = {
                int(statements[key]["start"]["line"])
                for key, count in entry.get("s", {}).items()
                if count and key in statements
            }
            if lines:
                covered[rel] = sorted(lines)
        return covered

    def check_candidates(self, checks: Sequence[CandidateCheck]) -> list[TestRun]:
        """Each check on its own patched files, one after the other; a file ``node --check`` refuses (or ``tsc``
        where the project has a tsconfig and TypeScript) is a run without results, the compiler's words its
        error."""
        runs = []
        for check in checks:
            try:
                with self.patched(check.files):
                    problem = self._static_problem(check.files)
                    if problem:
                        runs.append(TestRun(error=problem, output_tail=problem))
                        continue
                    self.warm_runs += 1
                    runs.append(self.run_tests(list(check.nodeids), stop_first=True, wall_seconds=check.wall_seconds))
            except SandboxError as exc:
                runs.append(TestRun(output_tail=str(exc), error=str(exc)))
        return runs

    def _static_problem(self, files: Mapping[str, str]) -> str:
        node = self._node
        for rel in files:
            if Path(rel).suffix in JS_SUFFIXES - {".jsx"} and node:
                proc = self._run([node, "--check", rel], SYNTAX_CHECK_SECONDS)
                if proc.returncode not in (0, None):
                    said = (proc.stderr or proc.stdout).replace(str(self.root) + "/", "").strip()
                    return f"node --check {rel}: {said[-1500:]}"
        tsc = self.root / "node_modules" / "typescript" / "bin" / "tsc"
        if any(Path(rel).suffix in TS_SUFFIXES for rel in files) and node and tsc.is_file():
            if (self.root / "tsconfig.json").is_file():
                proc = self._run([node, str(tsc), "--noEmit", "-p", "tsconfig.json"], SYNTAX_CHECK_SECONDS * 2)
                if proc.returncode not in (0, None):
                    errors = [line for line in proc.stdout.splitlines() if any(rel in line for rel in files)]
                    if errors:
                        return "tsc --noEmit: " + "\n".join(errors[:10])
        return ""

    # -- one runner invocation --------------------------------------------------------------------------------
    def _qa_path(self, name: str) -> str:
        """Where a QA test named ``_selfix_qa/<path>`` is written in the copy: ``<path>``, a file that must not
        exist yet (a QA test never replaces the project's own)."""
        rel = name.removeprefix(QA_TEST_DIR + "/")
        if rel == name or not rel:
            raise SandboxError(f"a QA test must be named under {QA_TEST_DIR}/: {name}")
        if self._path(rel).exists() and rel not in self._qa:
            raise SandboxError(f"the QA test {rel} would replace a file of the project")
        self._qa[rel] = name
        return rel

    def _groups(self, nodeids: Sequence[str] | None, qa_files: list[str]) -> list[_Invocation]:
        """The runner invocations a request needs: (files, the tests to select in them (none: all of them),
        whether the command's own spec files run too: the whole suite's do, a file asked for runs alone)."""
        if nodeids is None:
            return [(self._whole_suite_files(qa_files), [], True)]
        files: list[str] = []
        names: list[NodeTestName] = []
        whole: list[str] = []
        for nodeid in nodeids:
            if nodeid.startswith(QA_TEST_DIR + "/"):
                path = nodeid.partition("::")[0].removeprefix(QA_TEST_DIR + "/")
                whole.append(path)
                continue
            name = self._names.get(nodeid) or split_test_id(nodeid)
            if not name.titles:
                whole.append(name.file or "")
            else:
                names.append(name)
                if name.file and name.file not in files:
                    files.append(name.file)
        groups: list[_Invocation] = []
        if names:
            groups.append((files, names, False))
        if whole:
            groups.append(([w for w in dict.fromkeys(whole) if w], [], False))
        return groups

    def _whole_suite_files(self, qa_files: list[str]) -> list[str]:
        # jest, vitest and node's runner find a QA test named like the project's tests themselves; mocha runs
        # the files its command names, so the QA test is named to it.
        return qa_files if self.runner == "mocha" and qa_files else []

    def _run_once(
        self,
        files: list[str],
        names: list[NodeTestName],
        wall: float,
        coverage: bool,
        stop_first: bool,
        extra: Sequence[str] = (),
        extra_env: Mapping[str, str] | None = None,
        *,
        own_specs: bool = False,
    ) -> TestRun:
        self.runs += 1
        results_file = self._tmp / f"results-{self.runs}.out"
        results_file.unlink(missing_ok=True)
        results_file.with_name(results_file.name + ".end").unlink(missing_ok=True)
        arguments = [*extra, *self._arguments(files, names, results_file, stop_first)]
        command = self.command
        if files and not own_specs and self.runner in ("mocha", "node"):
            # The files asked for, not the command's own spec files beside them: a QA test run alone must not
            # wait for (or, with --bail, stop at) the whole suite.
            command = _without_spec_files(command, self.root)
        if self.runner == "node" and "--test" in command:
            # node's own flags go before the files the command names (after them they would be files too)
            at = command.index("--test") + 1
            argv = [*command[:at], *arguments, *command[at:]]
        else:
            argv = [*command, *arguments]
        env = {
            **self._private_env,
            "SELFIX_NODE_RESULTS": str(results_file),
            "SELFIX_NODE_COVERAGE": "1" if coverage else "0",
            "SELFIX_ROOT": str(self.root),
            "CI": "true",  # jest and vitest: no watch mode, no interactive output
            "NODE_OPTIONS": f"--max-old-space-size={self._heap_mib}",
            "NO_COLOR": "1",
            "FORCE_COLOR": "0",
            **(extra_env or {}),
        }
        proc = self._run(argv, wall, env)
        try:
            records = self._records(results_file)
        except (OSError, ValueError, JUnitError) as exc:
            return TestRun(error=f"the {self.runner} report could not be read: {exc}", output_tail=_tail(proc))
        results: dict[str, TestResult] = {}
        coverage_map: dict[str, dict[str, list[int]]] = {}
        for record in records:
            nodeid = node_test_id(record.name)
            nodeid = self._named_back(nodeid, record.name)
            self._names[nodeid] = record.name
            results[nodeid] = record.result(nodeid, self.root)
            if record.coverage:
                coverage_map[nodeid] = self._lines(record.coverage)
        error = ""
        if not results and (proc.returncode not in (0, None) or proc.timed_out):
            error = f"{self.runner} gave no result (exit {proc.returncode}): {_tail(proc, 15)}"
        return TestRun(
            results=results,
            coverage=coverage_map or None,
            timed_out=proc.timed_out,
            returncode=proc.returncode,
            duration=proc.duration,
            output_tail=_tail(proc),
            error=error,
        )

    def _named_back(self, nodeid: str, name: NodeTestName) -> str:
        if name.file in self._qa:
            return f"{self._qa[name.file]}::{nodeid.partition('::')[2]}" if name.titles else self._qa[name.file]
        return nodeid

    def _run(self, argv: Sequence[str], wall: float, extra: Mapping[str, str] | None = None) -> ProcessResult:
        env = sandbox_env(self._env_source, extra={**self._private_env, **(extra or {})})
        limits = dataclasses.replace(self.limits, wall_seconds=wall)
        return run_process(
            argv,
            cwd=self.root,
            env=env,
            limits=limits,
            isolation=self.isolation,
            writable=(self._tmp,),
            hidden=self._hidden,
        )

    def _arguments(self, files: list[str], names: list[NodeTestName], results: Path, stop_first: bool) -> list[str]:
        pattern = "^(?:" + "|".join(re.escape(n.full_title) for n in names) + ")$" if names else ""
        if self.runner == "mocha":
            args = ["--reporter", str(self._plugin / MOCHA_REPORTER), *files]
            if pattern:
                args += ["--grep", pattern]
            return [*args, *(["--bail"] if stop_first else [])]
        if self.runner == "jest":
            args = ["--ci", "--watchAll=false", "--runInBand", "--json", f"--outputFile={results}"]
            if files:
                args += ["--runTestsByPath", *files]
            if pattern:
                args += ["-t", pattern]
            return [*args, *(["--bail"] if stop_first else [])]
        if self.runner == "vitest":
            args = [] if "run" in self.command else ["run"]
            args += ["--reporter=junit", f"--outputFile={results}", "--watch=false", *files]
            if pattern:
                args += ["-t", pattern]
            return [*args, *(["--bail=1"] if stop_first else [])]
        # node's test runner: its name pattern matches each test's own title; the file narrows it.
        args = [
            f"--test-reporter={self._plugin / NODE_REPORTER}",
            "--test-reporter-destination=stdout",
            "--test-concurrency=1",
        ]
        args += [f"--test-name-pattern=^{re.escape(t)}$" for t in dict.fromkeys(n.titles[-1] for n in names)]
        return [*args, *files]  # node_args puts the files the command named after these

    def _records(self, results: Path) -> list[_Record]:
        if not results.exists() and not results.with_name(results.name + ".end").exists():
            return []
        if self.runner in ("mocha", "node"):
            # The reporter's whole record at the end of the run, else the lines it streamed (a killed run); a line
            # a test's fake fs mangled is skipped, its test then has no result (no result is no pass).
            complete = results.with_name(results.name + ".end")
            source = complete if complete.exists() else results
            records = []
            # "\n" alone ends a record: JSON.stringify leaves U+2028 and U+2029 raw (a title may hold them), and
            # str.splitlines would cut a record there.
            for line in source.read_text(encoding="utf-8", errors="replace").split("\n"):
                try:
                    data = json.loads(line) if line.strip() else None
                except ValueError:
                    continue
                if isinstance(data, dict):
                    records.append(_Record.from_reporter(data))
            return records
        if self.runner == "jest":
            return list(_jest_records(json.loads(results.read_text(encoding="utf-8", errors="replace")), self.root))
        out = []
        for case in parse_report(results):
            titles = tuple(case.name.split(" > "))
            status = {
                Outcome.PASSED: "passed",
                Outcome.FAILED: "failed",
                Outcome.ERROR: "error",
            }.get(case.outcome, "skipped")
            file = _relative(case.classname, self.root)
            out.append(_Record(NodeTestName(file, titles), status, "", case.message, case.text, case.duration or 0.0))
        return out

    def _lines(self, ranges_by_file: Mapping[str, list[list[int]]]) -> dict[str, list[int]]:
        covered: dict[str, list[int]] = {}
        for rel, ranges in ranges_by_file.items():
            try:
                text = self.read_file(rel)
            except (OSError, SandboxError):
                continue
            lines = covered_lines(text, ranges)
            if lines:
                covered[rel] = lines
        return covered


class _Record:
    """One test's outcome as a runner reported it."""

    def __init__(
        self,
        name: NodeTestName,
        state: str,
        exc_type: str,
        message: str,
        stack: str,
        duration: float,
        coverage: dict[str, list[list[int]]] | None = None,
    ) -> None:
        self.name, self.state, self.exc_type = name, state, exc_type
        self.message, self.stack, self.duration, self.coverage = message, stack, duration, coverage

    @classmethod
    def from_reporter(cls, data: dict[str, Any]) -> _Record:
        message = str(data.get("message", ""))
        if "actual" in data and "expected" in data and str(data["actual"]) not in message:
            message += f"\nactual: {data['actual']}\nexpected: {data['expected']}"
        titles = tuple(str(t) for t in data.get("titles") or ())
        file = data.get("file")
        return cls(
            NodeTestName(str(file) if file else None, titles),
            str(data.get("state", "failed")),
            str(data.get("type", "")),
            message,
            str(data.get("stack", "")),
            float(data.get("duration") or 0.0),
            data.get("coverage"),
        )

    def result(self, nodeid: str, root: Path | None = None) -> TestResult:
        status = _STATUS.get(self.state, TestStatus.SKIPPED)
        frames = tuple(reversed(tuple(_frames(self.stack, root))))
        exc_type = self.exc_type or (
            _exception_type(self.message or self.stack) if status is not TestStatus.PASSED else ""
        )
        if "Cannot find module" in self.message or "ERR_MODULE_NOT_FOUND" in self.message:
            # node's MODULE_NOT_FOUND is a plain Error: named as the import failure it is (a broken QA test's).
            exc_type = "ModuleNotFoundError"
        return TestResult(
            nodeid=nodeid,
            status=status,
            duration=self.duration,
            exc_type=exc_type,
            message=_one_line_first(self.message)[:4000],
            frames=frames,
        )


def _one_line_first(message: str) -> str:
    """The message with its start folded into a first line: node's and jest's assertion messages put the values
    below a heading ("Expected values to be strictly equal:"), and a failure fed back to the engine is its first
    line (``verify.describe``)."""
    if "\n" not in message.strip():
        return message
    folded = " ".join(message.split())[:300]
    return f"{folded}\n{message}"


def _jest_records(report: dict[str, Any], root: Path) -> Iterator[_Record]:
    for suite in report.get("testResults") or ():
        file = _relative(str(suite.get("name", "")), root)
        assertions = suite.get("assertionResults") or ()
        if not assertions and suite.get("status") == "failed":
            message = str(suite.get("message", ""))
            yield _Record(NodeTestName(file, ()), "error", _exception_type(message), message, message, 0.0)
        for case in assertions:
            titles = (*(str(t) for t in case.get("ancestorTitles") or ()), str(case.get("title", "")))
            state = {"passed": "passed", "failed": "failed"}.get(str(case.get("status")), "skipped")
            text = "\n".join(str(m) for m in case.get("failureMessages") or ())
            duration = float(case.get("duration") or 0.0) / 1000
            yield _Record(NodeTestName(file, titles), state, "", text.split("\n    at ")[0], text, duration)


def _frames(stack: str, root: Path | None) -> Iterator[Frame]:
    for line in stack.splitlines():
        match = _FRAME.match(line)
        if not match:
            continue
        path = match["path"].removeprefix("file://")
        if path.startswith("node:") or "node_modules" in path.split("/") or path.startswith("internal/"):
            continue
        if root is not None and os.path.isabs(path):
            relative = _relative(path, root)
            if relative is None or relative.startswith("/"):
                continue  # outside the project (a runner's own file)
            path = relative
        function = (match["function"] or "").removeprefix("async ").strip()
        yield Frame(file=path, line=int(match["line"]), function=function or "<anonymous>")


def _exception_type(text: str) -> str:
    match = re.match(r"\s*([A-Z]\w*(?:Error|Exception))\b", text)
    return match[1] if match else ("AssertionError" if "expect" in text.lower() else "Error")


def _relative(path: str | None, root: Path) -> str | None:
    if not path:
        return None
    path = path.removeprefix("file://")
    if os.path.isabs(path):
        try:
            return Path(path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return path
    return path.removeprefix("./")


def _asked(nodeid: str, wanted: set[str]) -> bool:
    if nodeid in wanted:
        return True
    file = nodeid.partition("::")[0]
    return file in wanted


def _tail(proc: ProcessResult, lines: int = 40) -> str:
    text = (proc.stdout + "\n" + proc.stderr).strip()
    return "\n".join(text.splitlines()[-lines:])


def _in_copy(arg: str, repo: Path, root: Path) -> str:
    """A path into the repository (``node_modules/.bin/mocha`` resolved by the front end, to its target
    ``node_modules/mocha/bin/mocha.js``) as the same path in the scratch copy: the repository is hidden from runs."""
    if not os.path.isabs(arg):
        return arg
    try:
        return str(root / Path(arg).relative_to(repo))
    except ValueError:
        return arg


def _outer_node_modules(repo: Path) -> Path | None:
    for folder in repo.parents:
        if (folder / "node_modules").is_dir():
            return folder / "node_modules"
        if (folder / ".git").exists():
            return None
    return None


def runner_command(test_cmd: Sequence[str], root: Path, runner: str, path: str | None = None) -> list[str]:
    """The test command with the runner called by its path in the copy's ``node_modules`` (``npx jest``, ``jest``
    and ``node_modules/.bin/jest`` all become that: ``npx`` could fetch a package), its own reporters dropped
    (selfix gives its own)."""
    args = list(test_cmd)
    if (args and Path(args[0]).name in ("npx", "pnpx")) or args[:2] in (["pnpm", "exec"], ["yarn", "exec"]):
        args = args[2:] if args[0] in ("pnpm", "yarn") else args[1:]
        args = [a for a in args if a not in ("--no-install", "--no")]
    if args and Path(args[0]).name in ("jest", "vitest", "mocha", "_mocha"):
        name = Path(args[0]).name
        local = _local_bin(root, name)
        if local is None:
            raise InputError(
                f"{name} is not installed in the project (node_modules/.bin/{name}): install the dependencies in "
                "the workflow before selfix runs (npm ci, pnpm install, yarn install); selfix never fetches them"
            )
        args = [str(local), *args[1:]]
    elif args and args[0] == "node":
        found = shutil.which("node", path=path)
        if found is None:
            raise InputError("node is not installed where selfix runs (not on PATH)")
        args[0] = found
    if args and Path(args[0]).name == "node" and "--test" not in args and runner == "node":
        args.insert(1, "--test")
    return _without_reporters(args, runner)


def _local_bin(root: Path, name: str) -> Path | None:
    for folder in (root, root.parent):
        candidate = folder / "node_modules" / ".bin" / name
        if candidate.exists():
            return candidate
    return None


_REPORTER_FLAGS = {
    "mocha": (
        {"-R", "--reporter", "-O", "--reporter-options", "--reporter-option"},
        ("--reporter=", "--reporter-option"),
    ),
    "jest": ({"--reporters", "--outputFile", "--json"}, ("--reporters=", "--outputFile=")),
    "vitest": ({"--reporter", "--outputFile"}, ("--reporter=", "--outputFile")),
    "node": ({"--test-reporter", "--test-reporter-destination"}, ("--test-reporter=", "--test-reporter-destination=")),
}


def _without_reporters(args: list[str], runner: str) -> list[str]:
    takes_value, prefixes = _REPORTER_FLAGS.get(runner, (set(), ()))
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in takes_value:
            skip = arg != "--json"
            continue
        if arg.startswith(prefixes):
            continue
        kept.append(arg)
    return kept


def _without_spec_files(command: Sequence[str], root: Path) -> list[str]:
    """The command without the spec files and folders it names (its words that name paths of the project, globs
    expanded as mocha would); option values (``-t 15000``, ``-r should``) name none and stay."""
    kept = [command[0]]
    words = list(command[1:])
    while "--spec" in words[:-1]:  # mocha's --spec names a spec file as its value: both go
        at = words.index("--spec")
        del words[at : at + 2]
    for arg in words:
        value = kept[-1] in _VALUE_FLAGS  # ``-r test/setup.js``, ``--file x.js``: a value, not a spec
        if not value and not arg.startswith("-") and glob.glob(arg, root_dir=root, recursive=True):
            continue
        kept.append(arg)
    return kept


# mocha's and node's flags that take the next word as their value
_VALUE_FLAGS = frozenset(
    {
        "-r", "--require", "--file", "-t", "--timeout", "-s", "--slow", "-u", "--ui", "-g", "--grep", "-f",
        "--fgrep", "--config", "--opts", "--package", "--extension", "--ignore", "--exclude", "--compilers",
        "--globals", "-j", "--jobs", "--retries", "--import", "--loader", "--experimental-loader",
        "--env-file", "--test-timeout", "--test-concurrency", "--test-name-pattern", "--test-skip-pattern",
    }
)  # fmt: skip


def covered_lines(text: str, ranges: Sequence[Sequence[int]]) -> list[int]:
    """The lines V8's block ranges (start offset, end offset, count; outer ranges before the ranges inside them)
    say ran: a line ran when the innermost range holding its first character counted it."""
    starts: list[int] = []  # each line's first non-blank character, as a UTF-16 offset (V8's unit)
    offset = 0
    for line in text_lines(text):  # lines as every other part of selfix numbers them
        stripped = len(line) - len(line.lstrip())
        starts.append(offset + len(line[:stripped].encode("utf-16-le")) // 2)
        offset += len(line.encode("utf-16-le")) // 2
    counts: dict[int, int] = {}
    for start, end, count in sorted((tuple(r) for r in ranges), key=lambda r: (r[0], -r[1])):
        for index in range(bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)):
            counts[index + 1] = count
    blank = {number for number, line in enumerate(text_lines(text), start=1) if not line.strip()}
    return sorted(number for number, count in counts.items() if count > 0 and number not in blank)


def _probe_lines(out: Path) -> tuple[ProbeLine, ...]:
    """The recorder's lines (plain JSON the code under test could have written anything into: each field is
    checked and bounded), each call's test named as the runs name it."""
    lines: list[ProbeLine] = []
    try:
        raw = out.read_text(encoding="utf-8", errors="replace").split("\n")  # see _records: U+2028 stays raw
    except OSError:
        return ()
    for text in raw[:20000]:
        try:
            record = json.loads(text)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        test = record.get("test")
        nodeid = ""
        if isinstance(test, dict) and isinstance(test.get("titles"), list):
            file = test.get("file") if isinstance(test.get("file"), str) else None
            nodeid = node_test_id(NodeTestName(file, tuple(str(t) for t in test["titles"])))
        fields = [record.get(k) for k in ("target", "variation", "text", "outcome")]
        if not all(isinstance(f, str) for f in fields) or not isinstance(record.get("call"), int):
            continue
        target, variation, shown, outcome = (str(f)[:2000] for f in fields)
        lines.append(
            ProbeLine(target=target, call=record["call"], variation=variation, text=shown, test=nodeid, outcome=outcome)
        )
    return tuple(lines)
