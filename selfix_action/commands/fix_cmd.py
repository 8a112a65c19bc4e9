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

import yaml
from pydantic import BaseModel, ConfigDict

from selfix_action.engine.loop import HealResult, LoopConfig
from selfix_action.engine.protocols import Engine
from selfix_action.engine.report import render_markdown
from selfix_action.errors import ExitCode, InputError
from selfix_action.heal import heal_repository
from selfix_action.junit import Outcome, parse_reports
from selfix_action.learn.hooks import attach_memory, learn_from_run, open_memory, outcome_fields, trace_header
from selfix_action.offline.engine import OfflineEngine
from selfix_action.sandbox.isolation import IsolationConfig, detect_isolation
from selfix_action.sandbox.process import Limits

ENGINES = ("offline", "anthropic", "openai")
ISOLATION_MODES = ("auto", "bwrap", "unshare", "none")


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
    # LLM engines (ignored by the offline engine)
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    max_calls: int = 40
    max_tokens: int = 400_000
    max_cost: float = 2.0
    prices: Path | None = None
    max_retry_wait: float = 30.0
    # sandbox isolation
    isolation: str = "auto"
    require_isolation: bool = False
    jobs: int | None = None  # candidates checked side by side; None: heal.default_jobs()
    # memory of past fixes (selfix_action.learn.memory): None = OUT/memory.db; use_memory=False turns it off
    memory: Path | None = None
    use_memory: bool = True


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

    def __init__(self, trace_path: Path, stream: TextIO, quiet: bool, header: dict[str, Any] | None = None) -> None:
        self._handle = open(trace_path, "w", encoding="utf-8")
        if header is not None:  # the trace schema's header record (selfix_action.learn.trace_schema)
            self._handle.write(json.dumps(header, default=str) + "\n")
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


def build_fix_engine(options: FixOptions, config: LoopConfig) -> Engine:
    if options.engine == "offline":
        return OfflineEngine()
    from selfix_action.llm.factory import build_engine  # imports a provider SDK: only when asked for

    prices = None
    if options.prices is not None:
        try:
            prices = yaml.safe_load(options.prices.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read the price table {options.prices}: {exc}") from exc
    return build_engine(
        options.engine,
        model=options.model,
        base_url=options.base_url,
        api_key=options.api_key,
        max_calls=options.max_calls,
        max_tokens=options.max_tokens,
        max_cost_usd=options.max_cost,
        time_limit=options.time_limit,
        prices=prices,
        env=os.environ,
        protected_paths=config.protected_paths,
        hypotheses=options.max_hypotheses,
        max_retry_wait=options.max_retry_wait,
    )


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

    config = LoopConfig(
        max_hypotheses=options.max_hypotheses,
        max_candidates=options.max_candidates,
        time_limit_seconds=options.time_limit,
        user_hint=options.hint,
    )
    # Everything that can be refused (a missing key, unavailable isolation) is refused before any output.
    engine = build_fix_engine(options, config)
    isolation = detect_isolation(IsolationConfig(mode=options.isolation, require_isolation=options.require_isolation))
    out_dir.mkdir(parents=True, exist_ok=True)
    _exclude_from_git(repo, out_dir)
    trace = RunOutput(out_dir / "trace.jsonl", err, options.quiet, header=trace_header(str(options.repo), engine.name))
    if hasattr(engine, "trace"):
        engine.trace = trace  # every prompt and response goes into trace.jsonl
    memory = None
    if options.use_memory:
        memory = open_memory(
            options.memory or out_dir / "memory.db", lambda m: print(f"selfix: warning: {m}", file=err)
        )
        if memory is not None:
            attach_memory(engine, memory, trace)
    try:
        result = heal_repository(
            repo,
            test_cmd,
            engine,
            config,
            limits=Limits(wall_seconds=options.test_timeout),
            isolation=isolation,
            parallel_checks=options.jobs,
            trace=trace,
            repo_label=str(options.repo),
            junit_failing=junit_failing,
            junit_passing=junit_passing,
        )
        trace("outcome", result.report.stop_reason.value, **outcome_fields(result.report))
    finally:
        trace.close()
    if memory is not None:
        learn_from_run(memory, out_dir / "trace.jsonl", result.report)
        memory.close()

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
    if report.usage.get("calls"):
        print(
            f"selfix: {report.usage['calls']} model calls, {report.usage.get('tokens', 0)} tokens, "
            f"${float(report.usage.get('cost_usd', 0.0)):.4f}",
            file=out,
        )
    print(
        f"selfix: {report.test_runs} test runs, {report.candidates_tried} candidates, "
        f"{report.timings.get('total', 0):.1f}s; report: {out_dir / 'report.md'}",
        file=out,
    )
    return report.exit_code
