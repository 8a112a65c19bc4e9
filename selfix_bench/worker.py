"""One benchmark task in its own process: materialize, heal (or apply the oracle / nothing), judge.

    python -m selfix_bench.worker TASK_FILE --mode offline|oracle|noop [--time-limit S]

Prints one JSON record on stdout. The runner (``runner.py``) starts one of these per task with a hard timeout.
Judging never trusts the tool's copy: a fresh buggy repo gets the tool's edits to non-test files, the task's
original tests are restored from the pristine source, and the F2P + P2P tests run in a clean ``pytest``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfix_action.heal import EngineChoice, HealRequest
from selfix_action.heal.request import ENGINES
from selfix_action.repair.loop import LoopConfig
from selfix_action.repair.patches import unified_diff
from selfix_action.repair.paths import is_test_path
from selfix_action.repair.protocols import Engine
from selfix_action.repair.report import Usage
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_action.tracebacks import read_error
from selfix_bench import realbugs
from selfix_bench.base import BenchTask
from selfix_bench.healing import heal_with
from selfix_bench.kinds import load_bench_task

API_KEY_VARIABLE = "SELFIX_BENCH_API_KEY"  # the --api-key of selfix bench, passed to the worker out of argv


def make_engine(spec: str) -> Engine:
    """A ``package.module:factory`` engine (any callable returning an Engine), for engines outside the product."""
    module, _, attr = spec.partition(":")
    if not attr:
        raise ValueError(f"unknown engine {spec!r} (use {', '.join(ENGINES)} or module:factory)")
    return getattr(importlib.import_module(module), attr)()


def engine_choice(mode: str, engine_json: str, task_id: str) -> EngineChoice:
    """The product's ``EngineChoice`` for a named engine: the bench command's flags (``engine_json``), the key
    from this process's environment (``SELFIX_BENCH_API_KEY`` when the key was given as a flag); a replay
    folder gives this task's transcript, ``TASK.jsonl``."""
    fields = json.loads(engine_json) if engine_json else {}
    fields.update(kind=mode, env=dict(os.environ))
    if fields.get("replay"):
        fields["replay"] = Path(fields["replay"]) / f"{task_id}.jsonl"
    if os.environ.get(API_KEY_VARIABLE):
        fields["api_key"] = os.environ[API_KEY_VARIABLE]
    return EngineChoice(**fields)


@dataclass(frozen=True)
class HealSettings:
    """How the benchmark heals each task: the engine (a name of the product's, or module:factory), its flags,
    the isolation level, and where the task's trace (every prompt and answer: the transcript) is kept."""

    mode: str = "offline"
    time_limit: float = 300.0
    max_candidates: int = 500
    engine_json: str = ""
    isolation: str = "none"
    transcript: Path | None = None
    junit: bool = False  # give the heal the CI's JUnit report (the task's F2P failing, its P2P passing)
    from_traceback: bool = False  # heal from the failing test's traceback alone (production_traceback)


def junit_report(failing: Sequence[str], passing: Sequence[str]) -> str:
    """A pytest-style JUnit report naming ``failing`` as failed and ``passing`` as passed: what the CI run of
    the buggy commit reports, so the heal starts from the failing tests CI saw, as the action does."""
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root, "testsuite", name="pytest", tests=str(len(failing) + len(passing)), failures=str(len(failing))
    )
    for nodeid, failed in [*((n, True) for n in failing), *((n, False) for n in passing)]:
        head, bracket, params = nodeid.partition("[")  # a parameter id may hold "::" itself
        path, *classes = head.split("::")
        name = (classes.pop() if classes else head) + bracket + params
        module = path.removesuffix(".py").replace("/", ".")
        case = ET.SubElement(suite, "testcase", classname=".".join([module, *classes]), name=name, file=path)
        if failed:
            ET.SubElement(case, "failure", message="failed in CI").text = "failed in CI"
    return ET.tostring(root, encoding="unicode")


def heal(
    repo: Path,
    test_cmd: tuple[str, ...],
    settings: HealSettings,
    hint: str,
    label: str,
    out_dir: Path,
    ci: tuple[Sequence[str], Sequence[str]] = ((), ()),
    engine: Engine | None = None,
) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
    """The product's heal pipeline on ``repo``: (edited files, their originals, record fields).

    The tasks are our pinned libraries, run unisolated by default so figures compare across machines, one
    check at a time (the runner runs tasks side by side). ``engine``: an engine object to heal with instead of
    ``settings.mode`` (the recall benchmark's, which keeps the evidence it is given)."""
    junit: tuple[Path, ...] = ()
    if settings.junit:
        out_dir.mkdir(parents=True, exist_ok=True)
        ci_report = out_dir.parent / "ci-junit.xml"
        ci_report.write_text(junit_report(*ci), encoding="utf-8")
        junit = (ci_report,)
    reported, traceback_text = None, ""
    if settings.from_traceback:
        traceback_text = production_traceback(repo, test_cmd, ci[0])
        if not traceback_text:
            return {}, {}, {"stop_reason": "no_production_traceback", "test_runs": 1}
        reported, hint = read_error(traceback_text, origin="the failing test's traceback"), ""
    custom = engine is not None or settings.mode not in ENGINES
    choice = EngineChoice() if custom else engine_choice(settings.mode, settings.engine_json, label)
    request = HealRequest(
        repo=repo,
        test_cmd=test_cmd,
        out_dir=out_dir,
        junit=junit,
        reported_error=reported,
        engine=choice,
        loop=LoopConfig(time_limit_seconds=settings.time_limit, max_candidates=settings.max_candidates, user_hint=hint),
        limits=Limits(),  # the product's default per test run (120 s): the benchmark is no stricter than a user
        isolation=IsolationConfig(mode=settings.isolation),
        jobs=1,
        repo_label=label,
    )
    try:
        outcome = heal_with(request, (engine or make_engine(settings.mode)) if custom else None)
    finally:
        trace = out_dir / "trace.jsonl"
        if settings.transcript is not None and trace.is_file():
            settings.transcript.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, settings.transcript)
    report = outcome.report
    fields: dict[str, Any] = {
        "warm_runs": report.process_runs.get("warm", 0) + report.process_runs.get("hot", 0),
        "cold_runs": report.process_runs.get("cold", 0),
        "hot_runs": report.process_runs.get("hot", 0),
        "stop_reason": report.stop_reason.value,
        "test_runs": report.test_runs,
        "candidates": report.candidates_tried,
        "timings": report.timings,
        "confidence": _confidence(report),
        **usage_fields(report.usage),
    }
    if report.patch is not None:
        fields["patch_engine"] = report.patch.template
    if reported is not None:
        fields["reported_traceback"] = traceback_text
        if report.reported_error is not None:
            fields["reproduced"] = report.reported_error.reproduced
            fields["reproduction_attempts"] = list(report.reported_error.attempts)
    return dict(outcome.result.files or {}), dict(outcome.result.originals or {}), fields


# Where the traceback says the code ran: a deployment's folder, not the checkout (the heal maps it back).
DEPLOYED_AT = "/srv/app/"


def production_traceback(repo: Path, test_cmd: tuple[str, ...], failing: Sequence[str]) -> str:
    """The failing tests run once in the product's sandbox; of the first whose exception left the project's own
    code (its innermost project frame not a test file), the traceback as production would log it: the test's
    frames dropped (production has no test), the project's frames under a deployment path, the exception line.
    "" when no failing test raised from the project's code (an assertion in the test is no production error)."""
    with PytestSandbox(repo, test_cmd, limits=Limits(), isolation=None) as sandbox:
        run = sandbox.run_tests(list(failing))
    for nodeid in failing:
        result = run.results.get(nodeid)
        if result is None or result.ok or not result.frames or is_test_path(result.frames[-1].file):
            continue
        frames = [f for f in result.frames if not is_test_path(f.file)]
        lines = ["Traceback (most recent call last):"]
        for frame in frames:
            lines.append(f'  File "{DEPLOYED_AT}{frame.file}", line {frame.line}, in {frame.function}')
            if frame.code.strip():
                lines.append(f"    {frame.code.strip()}")
        message = result.message.strip()
        first = message.splitlines()[0] if message else ""
        # pytest's message may repeat the type ("TypeError: ..."): the line is written once, as Python writes it.
        first = first.removeprefix(f"{result.exc_type}: ")
        lines.append(f"{result.exc_type}: {first}" if first else result.exc_type)
        return "\n".join(lines) + "\n"
    return ""


def usage_fields(usage: Usage) -> dict[str, Any]:
    """What a heal spent on the model, for the record: calls, asks, tokens in/out/cached, cost (the report's
    ``cost_usd``), model seconds."""
    return {
        "calls": usage.calls,
        "asks": usage.asks,  # asks for more context answered (llm.asks)
        "tokens": usage.tokens,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cost": usage.cost_usd,
        "model_seconds": usage.model_seconds,
        "price_known": usage.price_known,
        "offline_handed_over": usage.offline.handed_over if usage.offline is not None else None,
    }


def _confidence(report: Any) -> Any:
    """The confidence selfix gave its patch, when the report carries one (JSON-ready), else None."""
    value = getattr(report, "confidence", None)
    if value is None:
        return None
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, str | int | float | bool | dict | list):
        return value
    return str(getattr(value, "value", value))


def run_task(task: BenchTask, settings: HealSettings) -> dict[str, Any]:
    """Materialize the buggy tree, heal it (or apply the reference fix: oracle, or nothing: noop), and judge the
    edits on a fresh tree (``BenchTask.judge``). A real-bug task's tool gets the buggy commit + the developers'
    test change, its test command runs the changed test modules."""
    record: dict[str, Any] = {
        "id": task.id,
        "library": task.library,
        "mode": settings.mode,
        "kind": task.kind,
        "template": task.family,
    }
    mode = settings.mode
    python = task.python()
    with tempfile.TemporaryDirectory(prefix=f"selfix-{task.kind}-") as tmp:
        repo = task.materialize(Path(tmp) / "repo")
        started = time.monotonic()
        files: dict[str, str] = {}
        originals: dict[str, str] = {}
        if mode == "oracle":
            files, originals = task.reference_fix()
        elif mode != "noop":
            files, originals, fields = heal(
                repo,
                task.test_command(python),
                settings,
                task.bug_report,
                task.id,
                Path(tmp) / "out",
                (task.f2p, task.p2p),
            )
            record.update(fields)
        record["seconds"] = round(time.monotonic() - started, 3)
        record["patch"] = unified_diff(originals, files) if files else ""
        record.setdefault("test_runs", 0)
        record.setdefault("candidates", 0)
        unedited = task.unedited_verdict() if mode not in ("oracle", "noop") and not files else None
        record.update(unedited if unedited is not None else task.judge(files, python, Path(tmp)))
    return record


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("--mode", default="offline", help="oracle, noop, an engine name, or module:factory")
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--max-candidates", type=int, default=500)
    parser.add_argument("--engine-json", default="", help="the engine's flags (EngineChoice fields) as JSON")
    parser.add_argument("--isolation", default="none", help="the sandbox's isolation level (none)")
    parser.add_argument("--transcript", type=Path, help="keep the heal's trace.jsonl here")
    parser.add_argument("--junit", action="store_true", help="give the heal the CI's JUnit report of the task")
    parser.add_argument("--from-traceback", action="store_true", help="heal from the failing test's traceback alone")
    parser.add_argument("--mirror-dir", type=Path, help="local git mirrors for real-bug tasks (else their URLs)")
    args = parser.parse_args(argv)
    realbugs.set_mirror_dir(args.mirror_dir)
    task = load_bench_task(args.task)
    settings = HealSettings(
        mode=args.mode,
        time_limit=args.time_limit,
        max_candidates=args.max_candidates,
        engine_json=args.engine_json,
        isolation=args.isolation,
        transcript=args.transcript,
        junit=args.junit,
        from_traceback=args.from_traceback,
    )
    record = run_task(task, settings)
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
