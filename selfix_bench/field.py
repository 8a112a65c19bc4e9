"""``selfix bench field``: the field corpus. Real open-source projects, each at a pinned commit, run as their own CI
runs their tests, with one planted bug each, healed from the JUnit report their CI command writes.

    selfix bench field [bench/field] --mirror-dir DIR [--run NAME] [--time-limit S] [--only ID] [--check]

A task file (``bench/field/<id>.json``, ``"kind": "field"``) names the repository and the pinned commit, the
Python version (one of pyenv's), the pip install arguments (pinned), the CI's test command and the folder it runs
in (taken from the project's workflow file or tox.ini: ``ci.from`` says where), the layout features the project
was chosen for, and the planted bug: one ``(path, line, old, new)`` replacement in a function the tests cover.
No project source is stored here: the tree is exported from the git history (a local mirror, ``--mirror-dir``,
else the public URL) into ``~/.cache/selfix-bench/field``, where its venv is built too.

For each project: the pristine tree at a fixed folder of the cache (the venv's editable install points there),
its venv (pyenv's interpreter, ``pip install`` of the task's arguments); then, in a worker process under a hard
timeout, the bug planted, the CI command run in its folder through the product's sandbox (``run_process``)
with ``--junitxml`` added, and the product's heal from that report: the request ``selfix fix`` builds
(``fix_request``) at its defaults, the offline engine, the project's venv python as the test command's
interpreter, the CI's folder as ``working_directory`` (as the project's selfix workflow would name it). The
verdict is classified from the report's stop reason and message (``classify``): healed, not healed for a reason
about the bug, or failed for selfix's own reason (mapping, folder, plugin, interpreter, sandbox, reproduction,
time). Records go to ``OUT/field/RUN/results.jsonl`` (a rerun skips the recorded
projects), ``results.json`` and ``report.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfix_action.commands.fix_cmd import FixOptions, fix_request
from selfix_action.errors import InputError, SelfixError
from selfix_action.heal import EngineChoice, HealOutcome, HealRequest
from selfix_action.repair.patches import unified_diff
from selfix_action.sandbox.process import Limits, ProcessResult, private_dirs, run_process, sandbox_env
from selfix_bench import realbugs
from selfix_bench.base import CACHE_DIR, load_folder, read_task_data, venv_python
from selfix_bench.healing import heal_with
from selfix_bench.runner import read_records, run_module

KIND = "field"
SCHEMA = 1
FIELD_DIR = "field"  # under the bench cache: src/, envs/, work/
CI_WALL_SECONDS = 300.0
SETUP_GRACE_SECONDS = 120.0
JUNIT = "{junit}"
# setuptools-scm and hatch-vcs read the version from git metadata the exported tree does not have.
PIP_ENV = {"SETUPTOOLS_SCM_PRETEND_VERSION": "0.0.0", "PIP_NO_INPUT": "1"}


@dataclass(frozen=True)
class FieldBug:
    path: str  # repo-relative file
    line: int  # 1-based
    old: str  # text on that line, exactly once
    new: str  # what replaces it


@dataclass(frozen=True)
class FieldTask:
    id: str
    repo: str  # owner/name on GitHub
    commit: str
    python: str  # "3.12": pyenv's newest 3.12.x
    install: tuple[str, ...]  # pip install arguments, run in the tree's root ("-e", ".", "pytest==8.3.4", ...)
    ci_argv: tuple[str, ...]  # the CI's test command; "python" is the venv's, "{junit}" the report (else added)
    folder: str  # where the CI runs it, repository-relative ("" = the root)
    ci_from: str  # the workflow file (and line) or tox.ini the command comes from
    bug: FieldBug
    features: tuple[str, ...] = ()
    generated_files: Mapping[str, str] = dataclasses.field(default_factory=dict)  # what the CI's build writes
    exclude: tuple[str, ...] = ()  # paths left out of the tree (large files the mirror lacks: docs images)
    test_command: tuple[str, ...] = ()  # the command selfix is given when the CI's is not pytest ("python" likewise)
    notes: str = ""
    base_dir: str = ""

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}"

    def to_json(self) -> str:
        data = {
            "schema": SCHEMA,
            "kind": KIND,
            "id": self.id,
            "repo": self.repo,
            "commit": self.commit,
            "python": self.python,
            "install": list(self.install),
            "ci": {"argv": list(self.ci_argv), "folder": self.folder, "from": self.ci_from},
            "test_command": list(self.test_command),
            "features": list(self.features),
            "generated_files": dict(self.generated_files),
            "exclude": list(self.exclude),
            "bug": dataclasses.asdict(self.bug),
            "notes": self.notes,
        }
        return json.dumps(data, indent=1) + "\n"


def task_from_data(data: Mapping[str, Any], path: Path) -> FieldTask:
    try:
        if data.get("kind") != KIND:
            raise ValueError(f"kind is {data.get('kind')!r}, not {KIND!r}")
        ci = data["ci"]
        return FieldTask(
            id=data["id"],
            repo=data["repo"],
            commit=data["commit"],
            python=str(data["python"]),
            install=tuple(data["install"]),
            ci_argv=tuple(ci["argv"]),
            folder=ci.get("folder", ""),
            ci_from=ci["from"],
            bug=FieldBug(**data["bug"]),
            features=tuple(data.get("features", ())),
            generated_files=dict(data.get("generated_files", {})),
            exclude=tuple(data.get("exclude", ())),
            test_command=tuple(data.get("test_command", ())),
            notes=data.get("notes", ""),
            base_dir=str(path.parent.resolve()),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"bad field task file {path}: {exc}") from exc


def load_field_task(path: Path) -> FieldTask:
    return task_from_data(read_task_data(path), path)


def load_field_tasks(directory: Path) -> list[FieldTask]:
    return load_folder(directory, load_field_task, lambda task: task.id)


# -- the tree, the bug, the venv ---------------------------------------------------------------------------
def apply_bug(text: str, bug: FieldBug) -> str:
    """``text`` with the bug planted: ``old`` replaced by ``new`` on line ``line`` (it must be there once)."""
    lines = text.splitlines(keepends=True)
    if not 1 <= bug.line <= len(lines) or lines[bug.line - 1].count(bug.old) != 1:
        raise InputError(f"the bug's text {bug.old!r} is not once on line {bug.line} of {bug.path}")
    lines[bug.line - 1] = lines[bug.line - 1].replace(bug.old, bug.new)
    return "".join(lines)


def plant(repo: Path, bug: FieldBug) -> None:
    target = repo / bug.path
    target.write_text(apply_bug(target.read_text(encoding="utf-8"), bug), encoding="utf-8")


def work_dir(task: FieldTask, cache: Path) -> Path:
    """The project's fixed folder in the cache: ``repo/`` (the tree the venv's editable install points at) and
    the CI run's JUnit report beside it."""
    return cache / FIELD_DIR / "work" / task.id


def checkout(task: FieldTask, dest: Path, *, buggy: bool, cache: Path = CACHE_DIR) -> Path:
    """The pinned commit's tree at ``dest`` (replacing what is there) and the files its build generates, with
    the bug planted when ``buggy``."""
    bare = realbugs.git_cache({"url": task.url, "buggy_commit": task.commit, "fixed_commit": task.commit}, cache)
    if dest.exists():
        shutil.rmtree(dest)
    realbugs.export_tree(bare, task.commit, dest, task.exclude)
    for rel, text in task.generated_files.items():  # what the CI's install writes (a version file)
        (dest / rel).write_text(text, encoding="utf-8")
    if buggy:
        plant(dest, task.bug)
    return dest


def interpreter(version: str) -> str:
    """pyenv's newest CPython ``version`` (``$PYENV_ROOT``, else ``~/.pyenv``), else ``python<version>`` on PATH."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = sorted(
        (p for p in root.glob(f"{version}.*") if re.fullmatch(rf"{re.escape(version)}\.\d+", p.name)),
        key=lambda p: int(p.name.rsplit(".", 1)[1]),
    )
    if found:
        return str(found[-1] / "bin" / f"python{version}")
    on_path = shutil.which(f"python{version}")
    if on_path is None:
        raise InputError(f"no Python {version}: not in {root} nor on PATH")
    return on_path


def environment(task: FieldTask, cache: Path = CACHE_DIR) -> str:
    """The project's venv python (built once: pyenv's interpreter, ``pip install`` of the task's arguments in
    the pristine tree at the project's work folder, which an editable install then points at). A task with
    nothing to install runs on the interpreter itself (``python`` "": this one, which has pytest)."""
    if not task.install:
        checkout(task, work_dir(task, cache) / "repo", buggy=False, cache=cache)
        return interpreter(task.python) if task.python else sys.executable
    key = json.dumps([task.commit, task.python, list(task.install)])
    env = cache / FIELD_DIR / "envs" / f"{task.id}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"
    repo = work_dir(task, cache) / "repo"
    if not (env / ".complete").exists() or not repo.is_dir():
        checkout(task, repo, buggy=False, cache=cache)
    return venv_python(env, task.install, interpreter=interpreter(task.python), cwd=repo, pip_env=PIP_ENV)


def _argv(argv: Sequence[str], python: str, junit: Path | None) -> list[str]:
    """``argv`` with ``python`` for its leading "python" and the JUnit report's path for "{junit}" (a pytest
    command without one gets ``--junitxml``); ``junit`` None: the command as the heal is given it."""
    out = [python if i == 0 and arg == "python" else arg for i, arg in enumerate(argv)]
    if junit is None:
        return [arg for arg in out if JUNIT not in arg]
    if not any(JUNIT in arg for arg in out):
        out.append(f"--junitxml={JUNIT}")
    return [arg.replace(JUNIT, str(junit)) for arg in out]


def heal_command(task: FieldTask, python: str) -> tuple[str, ...]:
    """The test command selfix is given: the CI's own (its report option dropped), or the task's pytest one."""
    return tuple(_argv(task.test_command or task.ci_argv, python, None))


def run_ci(task: FieldTask, python: str, repo: Path, junit: Path, wall: float = CI_WALL_SECONDS) -> ProcessResult:
    """The CI's test command in its folder of ``repo``, writing the JUnit report ``junit``: project code, so
    through the product's sandbox runner, in a home and temp dir of its own, with the venv first on PATH."""
    junit.unlink(missing_ok=True)
    bin_dir = str(Path(python).parent)
    area = junit.parent / "ci-home"
    shutil.rmtree(area, ignore_errors=True)
    area.mkdir(parents=True)
    env = sandbox_env(
        os.environ,
        extra={
            **private_dirs(area),
            "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "/usr/bin:/bin")]),
            "VIRTUAL_ENV": str(Path(bin_dir).parent),
            "CI": "true",
        },
    )
    return run_process(
        _argv(task.ci_argv, python, junit), cwd=repo / task.folder, env=env, limits=Limits(wall_seconds=wall)
    )


def junit_counts(path: Path) -> dict[str, int]:
    """Test cases of a JUnit report by outcome (failed counts failures and errors)."""
    counts = {"failed": 0, "passed": 0, "skipped": 0}
    if not path.is_file():
        return counts
    for case in ET.parse(path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        key = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        counts[key] += 1
    return counts


def junit_failing(path: Path) -> list[str]:
    """The failing cases of a JUnit report as ``classname::name``."""
    if not path.is_file():
        return []
    return [
        f"{case.get('classname', '')}::{case.get('name', '')}"
        for case in ET.parse(path).getroot().iter("testcase")
        if any(child.tag in ("failure", "error") for child in case)
    ]


# -- the heal and its classification -------------------------------------------------------------------------
def field_request(
    repo: Path, test_cmd: Sequence[str], junit: Path, out_dir: Path, folder: str, settings: FieldSettings
) -> HealRequest:
    """The request ``selfix fix --junit REPORT --test-cmd CMD`` builds, at its defaults but the time limit and
    isolation; the CI's folder as ``working_directory``, as the project's selfix workflow would name it."""
    options = FixOptions(
        repo=repo,
        junit=(junit,),
        test_cmd=tuple(test_cmd),
        working_directory=folder,
        engine=EngineChoice(kind="offline"),
        out=out_dir,
        quiet=True,
        time_limit=settings.time_limit,
        isolation=settings.isolation,
    )
    return fix_request(options)


# Stop reasons that are about the bug (the engine found no patch) and those that are selfix's own failure.
BUG_REASONS = {
    "hypotheses_exhausted": "no candidate passed",
    "candidate_budget_exhausted": "candidate budget ran out",
    "test_run_budget_exhausted": "test-run budget ran out",
    "no_suspects": "no suspect line",
    "repeated_identical_edit": "repeated edit",
    "verified_unconfirmed": "patch not confirmed on the whole suite",
    "environment_not_code": "diagnosed as environment",
}
SELFIX_REASONS = {
    "report_tests_not_found": "mapping",
    "no_failing_tests": "mapping",
    "sandbox_error": "sandbox",
    "only_sandbox_failures": "sandbox",
    "not_reproducible": "reproduction",
    "only_hung_tests": "time",
    "time_limit": "time",
}
# Words of a message that name the cause better than the stop reason does, checked in this order.
MESSAGE_CAUSES = (
    ("mapping", ("maps to a pytest node id", "not in this checkout", "junit report")),
    ("plugin", ("plugin", "addopts", "xdist", "unrecognized arguments", "randomly", "rerun", "-n auto")),
    ("interpreter", ("interpreter", "unsupported python", "python version", "python 3.")),
    ("folder", ("working directory", "working_directory", "file or directory not found", "rootdir")),
)


def _cause_in(message: str) -> str | None:
    low = message.lower()
    for cause, words in MESSAGE_CAUSES:
        if any(word in low for word in words):
            return cause
    return None


def shareable(text: str) -> str:
    """``text`` with this machine's home folder written ``~``: records are committed (docs/bench-results)."""
    return text.replace(str(Path.home()) + "/", "~/")


def classify(stop_reason: str, message: str, error: str = "", candidates: int = 0) -> tuple[str, str]:
    """(verdict, reason): ``healed``; ``not healed`` with a reason about the bug; ``selfix failed`` with selfix's
    own (mapping, plugin, interpreter, folder, sandbox, reproduction, time, error). ``error``: the heal raised
    (``Type: message``) instead of reporting. A time limit reached after ``candidates`` were tried is the search's
    (the bug is harder than the budget); before any, the time went to running the suite: selfix's own."""
    if error:
        return "selfix failed", _cause_in(error) or "error"
    if stop_reason == "healed":
        return "healed", ""
    if stop_reason == "time_limit" and candidates:
        return "not healed", f"time limit reached while searching ({candidates} candidates)"
    if stop_reason in BUG_REASONS:
        return "not healed", BUG_REASONS[stop_reason]
    if stop_reason in SELFIX_REASONS:
        base = SELFIX_REASONS[stop_reason]
        refined = _cause_in(message) if base in ("sandbox", "reproduction") else None
        return "selfix failed", refined or base
    return "selfix failed", stop_reason or "error"


def _message(outcome: HealOutcome) -> str:
    report = outcome.report
    parts = [report.explanation, *report.notes]
    if report.junit_missing:
        parts.append("report names failing, not collected: " + ", ".join(report.junit_missing[:3]))
    if report.seen_failures:
        parts.append("failing here instead: " + ", ".join(report.seen_failures[:3]))
    for failure in report.failures[:1]:  # why the first failing test failed here (a collection error's import)
        parts.append(f"first failure here: {failure.nodeid}: {failure.exc_type} {failure.message[:300]}")
    return " | ".join(p for p in parts if p)[:1500]


@dataclass(frozen=True)
class FieldSettings:
    time_limit: float = 900.0  # the action's default
    isolation: str = "auto"  # the action's default
    ci_wall: float = CI_WALL_SECONDS
    cache: Path = CACHE_DIR


def run_project(task: FieldTask, settings: FieldSettings, out_dir: Path) -> dict[str, Any]:
    """Plant the bug in the project's work tree, run its CI command (the JUnit report), heal from the report;
    the record (never raises for the heal's sake: selfix's own errors are a verdict)."""
    cache = settings.cache
    record = _record(task)
    python = environment(task, cache)
    base = work_dir(task, cache)
    repo = checkout(task, base / "repo", buggy=True, cache=cache)
    junit = base / "junit.xml"
    ci = run_ci(task, python, repo, junit, settings.ci_wall)
    counts = junit_counts(junit)
    record["ci"] = {"exit": ci.returncode, "seconds": round(ci.duration, 1), **counts}
    if not counts["failed"]:
        tail = (ci.stdout + ci.stderr).strip()[-600:]
        record.update(verdict="corpus error", reason="the planted bug failed no test in CI", message=tail)
        record["seconds"] = 0.0
        return record
    test_cmd = heal_command(task, python)
    request = field_request(repo, test_cmd, junit, out_dir, task.folder, settings)
    started = time.monotonic()
    try:
        outcome = heal_with(request)
    except SelfixError as exc:
        record["seconds"] = round(time.monotonic() - started, 1)
        error = f"{type(exc).__name__}: {exc}"
        verdict, reason = classify("", "", error)
        record.update(verdict=verdict, reason=reason, stop_reason="", message=shareable(error)[:1500])
        return record
    record["seconds"] = round(time.monotonic() - started, 1)
    report = outcome.report
    message = _message(outcome)
    verdict, reason = classify(report.stop_reason.value, message, candidates=report.candidates_tried)
    if verdict == "not healed" and len(report.f2p_tests) > counts["failed"]:
        # More targets than CI's failing tests: the sandbox failed tests CI passed and took them as the bug's.
        verdict, reason = "selfix failed", "sandbox"
        message = f"{len(report.f2p_tests)} fail-to-pass target(s) for {counts['failed']} failing in CI: " + message
    record.update(
        f2p=list(report.f2p_tests)[:20],
        sandbox_failures=[r.nodeid for r in report.sandbox_failures][:20],
    )
    record.update(
        verdict=verdict,
        reason=reason,
        stop_reason=report.stop_reason.value,
        message=shareable(message),
        candidates=report.candidates_tried,
        test_runs=report.test_runs,
        patch=unified_diff(dict(outcome.result.originals or {}), dict(outcome.result.files or {}))
        if outcome.result.files
        else "",
    )
    return record


def check_project(task: FieldTask, settings: FieldSettings) -> dict[str, Any]:
    """The task's own check: the CI command on the pristine and on the buggy tree; the bug must fail at least
    one test that passes on the pristine tree."""
    python = environment(task, settings.cache)
    base = work_dir(task, settings.cache)
    runs: dict[str, Any] = {}
    for name, buggy in (("pristine", False), ("buggy", True)):
        repo = checkout(task, base / "repo", buggy=buggy, cache=settings.cache)
        junit = base / "junit.xml"
        proc = run_ci(task, python, repo, junit, settings.ci_wall)
        runs[name] = {
            "exit": proc.returncode,
            "seconds": round(proc.duration, 1),
            **junit_counts(junit),
            "failing": junit_failing(junit),
            "tail": (proc.stdout + proc.stderr).strip()[-800:] if not junit.is_file() else "",
        }
    new = sorted(set(runs["buggy"]["failing"]) - set(runs["pristine"]["failing"]))
    return {"id": task.id, "ok": bool(new) and runs["pristine"]["passed"] > 0, "planted_failing": new, **runs}


# -- the run: a worker process per project ---------------------------------------------------------------
@dataclass(frozen=True)
class FieldOptions:
    tasks: Path = Path("bench/field")
    out: Path = Path("results")
    run: str = "offline"
    only: tuple[str, ...] = ()
    mirror_dir: Path | None = None
    time_limit: float = 900.0
    isolation: str = "auto"
    check: bool = False
    cache: Path = CACHE_DIR


def _worker_argv(task: FieldTask, options: FieldOptions, record: Path, out_dir: Path) -> list[str]:
    return [
        "selfix_bench.field",
        "check" if options.check else "one",
        str(Path(task.base_dir) / f"{task.id}.json"),
        "--record",
        str(record),
        "--out-dir",
        str(out_dir),
        "--time-limit",
        str(options.time_limit),
        "--isolation",
        options.isolation,
        "--cache",
        str(options.cache),
        *(["--mirror-dir", str(options.mirror_dir)] if options.mirror_dir else []),
    ]


def run_field(options: FieldOptions, log: Callable[[str], None] = print) -> Path:
    """Every project of the corpus (resumable: a recorded project is not run again), then the tables."""
    tasks = load_field_tasks(options.tasks)
    if options.only:
        tasks = [t for t in tasks if t.id in options.only]
    run_dir = options.out / "field" / (f"{options.run}-check" if options.check else options.run)
    run_dir.mkdir(parents=True, exist_ok=True)
    results = run_dir / "results.jsonl"
    if options.check:
        results.unlink(missing_ok=True)  # a check is run anew every time
    done = {r["id"] for r in read_records(results)}
    realbugs.set_mirror_dir(options.mirror_dir)
    pending = [t for t in tasks if t.id not in done]
    log(f"{len(tasks)} project(s), {len(tasks) - len(pending)} already recorded -> {run_dir}")
    for index, task in enumerate(pending, 1):
        started = time.monotonic()
        record_file = run_dir / "records" / f"{task.id}.json"
        record_file.parent.mkdir(parents=True, exist_ok=True)
        record_file.unlink(missing_ok=True)
        try:
            environment(task, options.cache)  # pip and git: the bench's own, before the timed worker
        except (SelfixError, OSError, ValueError) as exc:
            record: dict[str, Any] = _failed(task, "corpus error", "install", f"{type(exc).__name__}: {exc}")
        else:
            timeout = options.time_limit + 2 * CI_WALL_SECONDS + SETUP_GRACE_SECONDS
            code, err = run_module(_worker_argv(task, options, record_file, run_dir / "out" / task.id), timeout)
            if record_file.is_file():
                record = json.loads(record_file.read_text(encoding="utf-8"))
            elif code == -1:
                record = _failed(task, "selfix failed", "time", f"the project's hard timeout ({timeout:.0f} s)")
            else:
                record = _failed(task, "selfix failed", "error", f"worker exit {code}: {err}")
        record["wall"] = round(time.monotonic() - started, 1)
        with open(results, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        log(f"[{index}/{len(pending)}] {task.id}: {_summary(record)}")
    records = {r["id"]: r for r in read_records(results)}
    ordered = [records[t.id] for t in tasks if t.id in records]
    (run_dir / "results.json").write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")
    if not options.check:
        (run_dir / "report.md").write_text(markdown_table(ordered, tasks), encoding="utf-8")
    return run_dir


def _record(task: FieldTask) -> dict[str, Any]:
    """What every record of ``task`` says of the project."""
    return {
        "id": task.id,
        "repo": task.repo,
        "commit": task.commit,
        "python": task.python,
        "features": list(task.features),
        "folder": task.folder,
        "working_directory": bool(task.folder),
    }


def _failed(task: FieldTask, verdict: str, reason: str, message: str) -> dict[str, Any]:
    return {
        **_record(task),
        "verdict": verdict,
        "reason": reason,
        "message": shareable(message)[-1500:],
        "seconds": 0.0,
    }


def _summary(record: Mapping[str, Any]) -> str:
    if "ok" in record:
        return f"{'ok' if record['ok'] else 'NOT OK'} planted failing: {len(record.get('planted_failing', []))}"
    reason = f" ({record['reason']})" if record.get("reason") else ""
    return f"{record.get('verdict')}{reason} {record.get('seconds', 0):.1f}s"


def _cell(text: str, width: int = 160) -> str:
    flat = " ".join(str(text).split()).replace("|", "\\|")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def markdown_table(records: Sequence[Mapping[str, Any]], tasks: Sequence[FieldTask] = ()) -> str:
    """The results as a markdown table (project, layout features, Python, verdict, reason, heal time, message)
    and the count of each verdict."""
    folders = {t.id: t.folder for t in tasks}
    lines = [
        "| project | commit | layout features | Python | verdict | reason | heal s | message |",
        "|---|---|---|---|---|---|---:|---|",
    ]
    for r in records:
        features = ", ".join(r.get("features", ()))
        folder = folders.get(r["id"], r.get("folder", ""))
        lines.append(
            f"| {r['id']} ({r.get('repo', '')}{'/' + folder if folder else ''}) | {str(r.get('commit', ''))[:10]} "
            f"| {features} | {r.get('python', '')} | {r.get('verdict', '')} | {_cell(r.get('reason', ''), 40)} "
            f"| {r.get('seconds', 0):.1f} | {_cell(r.get('message', '') if r.get('verdict') != 'healed' else '')} |"
        )
    verdicts: dict[str, int] = {}
    for r in records:
        verdicts[r.get("verdict", "")] = verdicts.get(r.get("verdict", ""), 0) + 1
    summary = ", ".join(f"{v}: {n}" for v, n in sorted(verdicts.items()))
    return "\n".join([*lines, "", f"{len(records)} project(s): {summary}", ""])


def print_table(records: Sequence[Mapping[str, Any]], log: Callable[[str], None] = print) -> None:
    width = max((len(r["id"]) for r in records), default=8)
    for r in records:
        if "ok" in r:
            log(f"{r['id']:<{width}}  {'ok' if r['ok'] else 'NOT OK':<7} {', '.join(r.get('planted_failing', [])[:3])}")
            continue
        log(
            f"{r['id']:<{width}}  {r.get('python', ''):<5} {r.get('verdict', ''):<14} {r.get('reason', '')[:28]:<28} "
            f"{r.get('seconds', 0):>6.1f}s  {_cell(r.get('message', ''), 90) if r.get('verdict') != 'healed' else ''}"
        )


# -- the command and the worker --------------------------------------------------------------------------
def add_field_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tasks", nargs="?", default=Path("bench/field"), type=Path, help="task folder or file")
    parser.add_argument("--out", type=Path, default=Path("results"), help="results root (OUT/field/RUN)")
    parser.add_argument("--run", default="offline", help="run name (default: offline)")
    parser.add_argument("--only", action="append", default=[], help="only this project id (repeatable)")
    parser.add_argument("--mirror-dir", type=Path, help="local git mirrors (owner+name/repo); else the public URLs")
    parser.add_argument("--time-limit", type=float, default=900.0, help="seconds per heal (the action's: 900)")
    parser.add_argument(
        "--isolation",
        default="auto",
        choices=["auto", "bwrap", "landlock", "unshare", "none"],
        help="the heals' sandbox isolation (the action's default: auto)",
    )
    parser.add_argument("--cache", type=Path, default=CACHE_DIR, help="trees and venvs (~/.cache/selfix-bench)")
    parser.add_argument(
        "--check", action="store_true", help="check the tasks instead: the CI command on the pristine and buggy tree"
    )


def run_field_command(args: argparse.Namespace) -> int:
    if args.time_limit <= 0:
        raise InputError("--time-limit must be positive")
    if args.mirror_dir is not None and not args.mirror_dir.is_dir():
        raise InputError(f"no such mirror directory: {args.mirror_dir}")
    options = FieldOptions(
        tasks=args.tasks,
        out=args.out,
        run=args.run,
        only=tuple(args.only),
        mirror_dir=args.mirror_dir,
        time_limit=args.time_limit,
        isolation=args.isolation,
        check=args.check,
        cache=args.cache,
    )
    run_dir = run_field(options, log=lambda m: print(m, flush=True))
    records = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    print_table(records, log=lambda m: print(m, flush=True))
    print(f"wrote {run_dir}/results.json" + ("" if options.check else ", report.md"), file=sys.stderr)
    return 0


def worker_main(argv: Sequence[str] | None = None) -> int:
    """``python -m selfix_bench.field one|check TASK_FILE --record FILE ...``: one project, its record written."""
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.field")
    parser.add_argument("mode", choices=["one", "check"])
    parser.add_argument("task", type=Path)
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--time-limit", type=float, default=900.0)
    parser.add_argument("--isolation", default="auto")
    parser.add_argument("--cache", type=Path, default=CACHE_DIR)
    parser.add_argument("--mirror-dir", type=Path)
    args = parser.parse_args(argv)
    realbugs.set_mirror_dir(args.mirror_dir)
    task = load_field_task(args.task)
    settings = FieldSettings(time_limit=args.time_limit, isolation=args.isolation, cache=args.cache)
    if args.mode == "check":
        record = check_project(task, settings)
    else:
        shutil.rmtree(args.out_dir, ignore_errors=True)
        record = run_project(task, settings, args.out_dir)
    args.record.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
