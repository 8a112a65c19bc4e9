"""``selfix fix``: heal a local repository and write patch.diff, report.md, report.json and trace.jsonl."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict

from selfix_action.engine.loop import HealingLoop, HealResult, LoopConfig
from selfix_action.engine.report import render_markdown
from selfix_action.errors import ExitCode, InputError
from selfix_action.junit import Outcome, parse_reports
from selfix_action.offline.engine import OfflineEngine
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox

ENGINES = ("offline",)


class FixOptions(BaseModel):
    """Everything ``selfix fix`` was asked to do, validated once."""

    model_config = ConfigDict(frozen=True)

    repo: Path
    junit: tuple[Path, ...] = ()
    test_cmd: tuple[str, ...] = ()
    engine: str = "offline"
    out: Path | None = None
    apply: bool = False
    quiet: bool = False
    test_timeout: float = 120.0
    max_candidates: int = 500
    max_hypotheses: int = 3
    time_limit: float = 900.0
    hint: str = ""


def resolve_test_cmd(test_cmd: str | None, repo: Path) -> tuple[str, ...]:
    """The project's pytest invocation; a relative interpreter path (``.venv/bin/python``) is the repo's."""
    if not test_cmd:
        return (sys.executable, "-m", "pytest")
    try:
        argv = shlex.split(test_cmd)
    except ValueError as exc:
        raise InputError(f"cannot parse --test-cmd {test_cmd!r}: {exc}") from exc
    if not argv:
        raise InputError("--test-cmd is empty")
    program = argv[0]
    if os.sep in program and not os.path.isabs(program):
        program = str((repo / program).resolve())
    elif os.sep not in program:
        found = shutil.which(program)
        if found is None:
            raise InputError(f"test command not found: {program}")
        program = found
    if not os.access(program, os.X_OK):
        raise InputError(f"test command is not an executable file: {program}")
    return (program, *argv[1:])


class RunOutput:
    """trace.jsonl (one event per step) and the progress lines a person sees on the terminal."""

    def __init__(self, trace_path: Path, stream: TextIO, quiet: bool) -> None:
        self._handle = open(trace_path, "w", encoding="utf-8")
        self._stream = stream
        self._quiet = quiet
        self._started = time.monotonic()

    def __call__(self, step: str, message: str = "", **data: Any) -> None:
        event = {"t": round(time.monotonic() - self._started, 3), "step": step, "message": message, **data}
        self._handle.write(json.dumps(event, default=str) + "\n")
        self._handle.flush()
        if not self._quiet:
            print(f"[selfix {event['t']:7.1f}s] {step}: {message}", file=self._stream, flush=True)

    def close(self) -> None:
        self._handle.close()


def _exclude_from_git(repo: Path, out: Path) -> None:
    """Keep selfix's output out of ``git status`` without touching the project's .gitignore."""
    git_dir = repo / ".git"
    if not git_dir.is_dir() or not out.is_relative_to(repo):
        return
    entry = "/" + out.relative_to(repo).as_posix() + "/"
    exclude = git_dir / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if entry not in existing.splitlines():
        with open(exclude, "a", encoding="utf-8") as handle:
            handle.write(("" if existing.endswith("\n") or not existing else "\n") + entry + "\n")


def _junit_sets(paths: Sequence[Path], err: TextIO) -> tuple[list[str], list[str]]:
    report = parse_reports(paths)
    if report.errors:
        for error in report.errors:
            print(f"selfix: error: {error.path}: {error.reason}", file=err)
        raise InputError(f"{len(report.errors)} JUnit report(s) could not be read")
    failing = [c for c in report.cases if c.outcome in (Outcome.FAILED, Outcome.ERROR)]
    passing = [c for c in report.cases if c.outcome is Outcome.PASSED]
    unmapped = [c for c in failing if c.nodeid is None]
    if failing and len(unmapped) == len(failing):
        raise InputError(
            "none of the failing tests in the JUnit report(s) maps to a pytest node id "
            f"(first: {unmapped[0].classname} {unmapped[0].name}); selfix fix heals pytest suites"
        )
    return [c.nodeid for c in failing if c.nodeid], [c.nodeid for c in passing if c.nodeid]


def apply_to_tree(repo: Path, result: HealResult) -> None:
    """Write the verified patch into the user's tree, only if the files are still as selfix found them."""
    assert result.files is not None
    for path, original in result.originals.items():
        with open(repo / path, encoding="utf-8", newline="") as handle:
            if handle.read() != original:
                raise InputError(f"{path} changed while selfix was working; not applying (see patch.diff)")
    for path, text in result.files.items():
        target = repo / path
        # Write beside the file and rename, so an interrupted apply never leaves a half-written file.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".selfix")
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        shutil.copymode(target, tmp)
        os.replace(tmp, target)


def run_fix(options: FixOptions, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout  # looked up per call: tests and embedders swap sys.stdout
    err = err or sys.stderr
    repo = options.repo.resolve()
    if not repo.is_dir():
        raise InputError(f"not a directory: {options.repo}")
    if options.engine not in ENGINES:
        raise InputError(f"unknown engine {options.engine!r} (available: {', '.join(ENGINES)})")
    for path in options.junit:
        if not path.is_file():
            raise InputError(f"JUnit report not found: {path}")
    junit_failing, junit_passing = _junit_sets(options.junit, err) if options.junit else ([], [])
    if options.junit and not junit_failing:
        print("selfix: the JUnit report(s) show no failing test: nothing to heal", file=out)
        return ExitCode.NOTHING_TO_HEAL
    test_cmd = options.test_cmd or resolve_test_cmd(None, repo)
    out_dir = (options.out or repo / ".selfix").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    _exclude_from_git(repo, out_dir)

    trace = RunOutput(out_dir / "trace.jsonl", err, options.quiet)
    config = LoopConfig(
        max_hypotheses=options.max_hypotheses,
        max_candidates=options.max_candidates,
        time_limit_seconds=options.time_limit,
        user_hint=options.hint,
    )
    try:
        with PytestSandbox(repo, test_cmd, limits=Limits(wall_seconds=options.test_timeout)) as sandbox:
            loop = HealingLoop(sandbox, OfflineEngine(), config, trace=trace, repo_label=str(options.repo))
            result = loop.run(junit_failing, junit_passing)
    finally:
        trace.close()

    report = result.report
    (out_dir / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out_dir / "report.md").write_text(render_markdown(report), encoding="utf-8")
    patch_path = out_dir / "patch.diff"
    patch_path.unlink(missing_ok=True)  # never leave a stale patch from an earlier run beside a new report

    print(f"selfix: {report.stop_reason.value}: {report.explanation}", file=out)
    if report.patch is not None:
        patch_path.write_text(report.patch.diff, encoding="utf-8")
        print(f"\n{report.patch.diff}", file=out)
        if options.apply:
            apply_to_tree(repo, result)
            print(f"selfix: applied the patch to {', '.join(report.patch.files)}", file=out)
        else:
            print(f"selfix: patch written to {patch_path} (apply with `git apply` or --apply)", file=out)
    print(
        f"selfix: {report.test_runs} test runs, {report.candidates_tried} candidates, "
        f"{report.timings.get('total', 0):.1f}s; report: {out_dir / 'report.md'}",
        file=out,
    )
    return report.exit_code
