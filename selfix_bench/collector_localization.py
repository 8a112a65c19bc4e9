"""Localization without coverage.py: selfix's own line collector against the traceback-only fallback, side by side
in one run, on the mutant benchmark tasks (``bench/tasks``) healed with the offline engine in a project environment
that lacks coverage.py; and the collector's slowdown against coverage.py on the same suites.

    .venv/bin/python -m selfix_bench.collector_localization [TASKS_DIR] [--tasks N] [--match TEXT] [--time-limit S]
        [--timing-tasks K] [--repeats R] [--out FILE]

For each task, two heals on the same buggy copy, one after the other so that machine noise hits both alike:
``collector`` (the sandbox's default: per-test lines from the plugin's LineCollector when coverage.py is missing)
and ``tracebacks`` (``line_collector="never"``: what selfix did before, localization from the failing tracebacks
only). Each is judged as ``selfix bench`` judges (a fresh buggy copy + the patch + the original tests: every F2P
and P2P test passes). Prints per mode: no_suspects count, resolved count and rate, candidates tried (median, total)
and time; the paired table per task goes to ``--out`` (JSON lines).

Slowdown: on the first K tasks, the whole suite's baseline run with per-test coverage, R times each, interleaved:
coverage.py (the task's usual environment, which has it), selfix's collector (the same interpreter, the collector
forced with ``line_collector="always"``) and no coverage at all; the ratios collector / coverage.py and each / none.

The environments without coverage.py are venvs of this interpreter with only the task's pytest pin, made once
under the benchmark cache (``pip install``: the network or a pip cache is needed the first time).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from selfix_action.heal import HealRequest
from selfix_action.repair.loop import LoopConfig
from selfix_action.repair.report import StopReason
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.base import CACHE_DIR, venv_python
from selfix_bench.healing import heal_with
from selfix_bench.tasks import Task, load_tasks

MODES = {"collector": "fallback", "tracebacks": "never"}


def python_without_coverage(task: Task) -> str:
    """A venv of this interpreter with the task's pytest and nothing else (no coverage.py), made once."""
    import pytest

    pin = task.pytest or f"pytest=={pytest.__version__}"
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", pin).strip("-") + "-no-coverage"
    env = CACHE_DIR / "envs" / slug
    python = venv_python(env, [pin])
    if any((env / "lib").glob("python*/site-packages/coverage")):
        raise SystemExit(f"{python} has coverage.py: not an environment without it")
    return python


def heal_once(task: Task, python: str, collector: str, time_limit: float, max_candidates: int) -> dict[str, Any]:
    """One heal of the task's buggy tree through the product's pipeline (offline engine, the given line
    collector), judged as ``selfix bench`` judges."""
    with tempfile.TemporaryDirectory(prefix="selfix-collector-bench-") as tmp:
        repo = task.materialize(Path(tmp) / "repo")
        request = HealRequest(
            repo=repo,
            test_cmd=task.test_command(python),
            out_dir=Path(tmp) / "out",
            loop=LoopConfig(time_limit_seconds=time_limit, max_candidates=max_candidates, user_hint=task.bug_report),
            limits=Limits(wall_seconds=60),
            isolation=IsolationConfig(mode="none"),
            jobs=1,
            repo_label=task.id,
            line_collector=collector,
        )
        started = time.monotonic()
        outcome = heal_with(request)
        seconds = time.monotonic() - started
        report = outcome.report
        files = dict(outcome.result.files or {})
        verdict = task.judge(files, python, Path(tmp)) if files else {"resolved": False}
    return {
        "stop_reason": report.stop_reason.value,
        "resolved": bool(verdict["resolved"]),
        "candidates": report.candidates_tried,
        "coverage_used": report.coverage_used,
        "collector": measured_by(report.localization_note) if report.coverage_used else "",
        "seconds": round(seconds, 2),
    }


def measured_by(localization_note: str) -> str:
    """What measured the per-test lines, as the localization note names it (coverage.py, sys.settrace, ...)."""
    _, found, collector = localization_note.rpartition("measured by ")
    return collector.strip() if found else ""


def baseline_seconds(task: Task, python: str, collector: str, coverage: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="selfix-collector-time-") as tmp:
        repo = task.materialize(Path(tmp) / "repo")
        with PytestSandbox(
            repo, [python, "-m", "pytest"], limits=Limits(wall_seconds=300), line_collector=collector
        ) as sandbox:
            started = time.monotonic()
            run = sandbox.run_tests(coverage=coverage)
            elapsed = time.monotonic() - started
            if coverage and run.coverage is None:
                raise SystemExit(f"{task.id}: no coverage from {collector}: {run.coverage_note or run.output_tail}")
    return elapsed


def summarize(rows: list[dict[str, Any]], mode: str) -> str:
    results = [row[mode] for row in rows]
    resolved = sum(r["resolved"] for r in results)
    no_suspects = sum(r["stop_reason"] == StopReason.NO_SUSPECTS.value for r in results)
    budget = sum(r["stop_reason"] == StopReason.CANDIDATE_BUDGET.value for r in results)
    candidates = [r["candidates"] for r in results]
    seconds = [r["seconds"] for r in results]
    return (
        f"{mode:11s} resolved {resolved}/{len(results)} ({resolved / len(results):.0%}); no_suspects {no_suspects}; "
        f"candidate budget out {budget}; candidates median {statistics.median(candidates):g}, total {sum(candidates)}; "
        f"time median {statistics.median(seconds):.1f}s, total {sum(seconds):.0f}s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks_dir", nargs="?", type=Path, default=Path("bench/tasks"))
    parser.add_argument("--tasks", type=int, default=10, help="how many tasks (spread over the libraries)")
    parser.add_argument("--match", default="", help="only tasks whose id contains this")
    parser.add_argument("--time-limit", type=float, default=90.0, help="per heal")
    parser.add_argument("--max-candidates", type=int, default=500)
    parser.add_argument("--timing-tasks", type=int, default=3, help="tasks whose baseline is timed (0: none)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="JSON lines, one per task")
    args = parser.parse_args(argv)

    tasks = [t for t in load_tasks(args.tasks_dir) if args.match in t.id]
    by_library: dict[str, list[Task]] = {}
    for task in tasks:
        by_library.setdefault(task.id.split("-")[0], []).append(task)
    picked: list[Task] = []
    while len(picked) < args.tasks and any(by_library.values()):
        for queue in by_library.values():
            if queue and len(picked) < args.tasks:
                picked.append(queue.pop(0))
    rows: list[dict[str, Any]] = []
    out = args.out.open("w", encoding="utf-8") if args.out else None
    for task in picked:
        python = python_without_coverage(task)
        row: dict[str, Any] = {"id": task.id}
        for mode, collector in MODES.items():
            row[mode] = heal_once(task, python, collector, args.time_limit, args.max_candidates)
        rows.append(row)
        print(f"{task.id}: " + "; ".join(f"{m} {row[m]['stop_reason']} ({row[m]['candidates']})" for m in MODES))
        if out is not None:
            out.write(json.dumps(row) + "\n")
            out.flush()
    print(f"\n{len(rows)} tasks, offline engine, project environment without coverage.py:")
    for mode in MODES:
        print("  " + summarize(rows, mode))
    both = sum(r["collector"]["resolved"] and r["tracebacks"]["resolved"] for r in rows)
    only_c = sum(r["collector"]["resolved"] and not r["tracebacks"]["resolved"] for r in rows)
    only_t = sum(r["tracebacks"]["resolved"] and not r["collector"]["resolved"] for r in rows)
    print(f"  paired: resolved by both {both}, only with the collector {only_c}, only with tracebacks {only_t}")

    if args.timing_tasks > 0:
        ratios = []
        print(f"\nbaseline run with per-test coverage, median of {args.repeats} (seconds):")
        for task in picked[: args.timing_tasks]:
            python = task.python()  # the task's usual environment: it has coverage.py
            samples: dict[str, list[float]] = {"coverage.py": [], "collector": [], "none": []}
            for _ in range(args.repeats):
                samples["coverage.py"].append(baseline_seconds(task, python, "fallback", True))
                samples["collector"].append(baseline_seconds(task, python, "always", True))
                samples["none"].append(baseline_seconds(task, python, "fallback", False))
            median = {k: statistics.median(v) for k, v in samples.items()}
            ratio = median["collector"] / median["coverage.py"]
            ratios.append(ratio)
            print(
                f"  {task.id}: coverage.py {median['coverage.py']:.2f}, collector {median['collector']:.2f}, "
                f"none {median['none']:.2f}; collector/coverage.py {ratio:.2f}x, "
                f"coverage.py/none {median['coverage.py'] / median['none']:.2f}x, "
                f"collector/none {median['collector'] / median['none']:.2f}x"
            )
        print(f"  collector / coverage.py, median over tasks: {statistics.median(ratios):.2f}x")
    if out is not None:
        out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
