"""Validation speed, side by side in one run: selfix's fast path against the naive path on the same candidates.

    python -m selfix_bench.speed bench/tasks --tasks 8 --candidates 25

For each task: reproduce + localize once, take the offline engine's first N candidates (in its own order), then
validate every one of them through the healing loop's own verification, as ``selfix fix`` does:

- fast: F2P first with stop at the first failure, then the P2P tests covering the edited function, in the hot
  worker (imported and collected once, a fork per check), two candidates checked side by side (both cores),
  programs already verified skipped; the worker's start-up is inside the timed region;
- fast-1: the same, one candidate at a time (one core);
- naive: a fresh cold ``pytest`` over the whole suite for every candidate (``full_suite_per_candidate``).

It reports candidates validated per second for each path, the ratios, and every candidate whose verdict
differs between the paths (the naive verdict is the ground truth: a clean pytest run of the whole suite).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from selfix_action.errors import SelfixError
from selfix_action.offline.engine import OfflineEngine
from selfix_action.repair.config import LoopConfig
from selfix_action.repair.evidence import gather_evidence, reproduce
from selfix_action.repair.patches import program_key
from selfix_action.repair.values import CandidatePatch, Evidence
from selfix_action.repair.verify import Stop, Verifier
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.tasks import Task, load_tasks


def candidates_for(
    task: Task, repo: Path, python: str, count: int
) -> tuple[Evidence, list[CandidatePatch], dict[str, float]]:
    """Evidence, the engine's first ``count`` candidates (exactly as the healing loop would get them) and the
    per-test seconds of the baseline run on the unpatched code (the base of the adaptive candidate limit)."""
    with PytestSandbox(repo, [python, "-m", "pytest"], limits=Limits(wall_seconds=60)) as box:
        verifier = Verifier(box, LoopConfig())
        reproduction = reproduce(verifier)
        if reproduction.stop is not None:
            raise SelfixError(
                f"{task.id}: reproduction stopped ({reproduction.stop.reason.value}): {reproduction.stop.detail}"
            )
        evidence = gather_evidence(box, reproduction)
        engine = OfflineEngine()
        found: list[CandidatePatch] = []
        for hypothesis in engine.hypotheses(evidence, box, 3):
            for candidate in engine.candidates(hypothesis, evidence, box, []):
                found.append(candidate)
                if len(found) >= count:
                    return evidence, found, verifier.baseline_seconds
    return evidence, found, verifier.baseline_seconds


@dataclass(frozen=True)
class Validation:
    startup_seconds: float  # scratch copy, and for the fast path the hot worker's imports and collection
    check_seconds: float  # validating the candidates themselves
    verdicts: list[bool]
    test_runs: int
    skipped_as_verified: int

    @property
    def seconds(self) -> float:
        return self.startup_seconds + self.check_seconds


class _Adaptive(TypedDict):
    """The adaptive candidate limit's inputs, as ``validate`` takes them."""

    baseline_seconds: dict[str, float] | None
    limit_factor: float


def validate(
    repo: Path,
    python: str,
    evidence: Evidence,
    candidates: list[CandidatePatch],
    *,
    naive: bool,
    workers: int,
    baseline_seconds: dict[str, float] | None = None,
    limit_factor: float = LoopConfig().candidate_limit_factor,
) -> Validation:
    """Validate ``candidates`` on one path through the healing loop's own verification (``Verifier.verified``),
    as ``selfix fix`` does; the one-time start-up is timed apart from the checks."""
    config = LoopConfig(
        full_suite_per_candidate=naive,
        candidate_limit_factor=limit_factor,
        max_candidates=len(candidates) + 1,
        max_test_runs=100 * len(candidates) + 10,
        time_limit_seconds=24 * 3600.0,
    )
    started = time.perf_counter()
    with PytestSandbox(
        repo, [python, "-m", "pytest"], limits=Limits(wall_seconds=60), hot=not naive, parallel_checks=workers
    ) as box:
        if not naive and not box.start_hot_worker():
            raise SelfixError(f"the hot worker did not start: {box.hot_unavailable}")
        ready = time.perf_counter()
        # The baseline's per-test seconds were measured once per task, as the loop's reproduction does.
        verifier = Verifier(box, config, baseline_seconds=baseline_seconds)
        verdicts = {}
        for item in verifier.verified(
            candidates, None, evidence, set(), independent=OfflineEngine.independent_candidates
        ):
            if isinstance(item, Stop):
                raise SelfixError(f"verification stopped before the last candidate: {item.reason.value}")
            candidate, verdict = item
            verdicts[program_key(candidate.files, candidate.normalized)] = verdict.ok
        done = time.perf_counter()
        runs = box.runs
    return Validation(
        startup_seconds=ready - started,
        check_seconds=done - ready,
        verdicts=[verdicts[program_key(c.files, c.normalized)] for c in candidates],
        test_runs=runs,
        skipped_as_verified=len(candidates) - len(verdicts),
    )


def _mismatches(candidates: list[CandidatePatch], fast: Validation, naive: Validation) -> list[str]:
    pairs = zip(candidates, fast.verdicts, naive.verdicts, strict=True)
    return [candidate.description for candidate, a, b in pairs if a != b]


def measure(
    tasks: Sequence[Task], count: int, log=print, limit_factor: float = LoopConfig().candidate_limit_factor
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for task in tasks:
        python = task.python()
        with tempfile.TemporaryDirectory(prefix="selfix-speed-") as tmp:
            repo = task.materialize(Path(tmp) / "repo")
            evidence, candidates, seconds = candidates_for(task, repo, python, count)
            if not candidates:
                log(f"{task.id}: no candidates")
                continue
            adaptive: _Adaptive = {"baseline_seconds": seconds, "limit_factor": limit_factor}
            fast = validate(repo, python, evidence, candidates, naive=False, workers=2, **adaptive)
            fast1 = validate(repo, python, evidence, candidates, naive=False, workers=1, **adaptive)
            naive = validate(repo, python, evidence, candidates, naive=True, workers=1)
        mismatches = _mismatches(candidates, fast, naive)
        mismatches1 = _mismatches(candidates, fast1, naive)
        row = {
            "id": task.id,
            "candidates": len(candidates),
            "passing": sum(naive.verdicts),
            "fast_startup_seconds": round(fast.startup_seconds, 3),
            "fast_check_seconds": round(fast.check_seconds, 3),
            "fast1_startup_seconds": round(fast1.startup_seconds, 3),
            "fast1_check_seconds": round(fast1.check_seconds, 3),
            "naive_seconds": round(naive.seconds, 3),
            "fast_runs": fast.test_runs,
            "naive_runs": naive.test_runs,
            "skipped_as_verified": fast.skipped_as_verified,
            "mismatches": mismatches,
            "mismatches_fast1": mismatches1,
        }
        rows.append(row)
        log(
            f"{task.id}: {len(candidates)} candidates; naive {naive.seconds:.2f}s; fast: start-up "
            f"{fast.startup_seconds:.2f}s + checks {fast.check_seconds:.2f}s "
            f"({naive.seconds / fast.check_seconds:.1f}x per candidate, {naive.seconds / fast.seconds:.1f}x with "
            f"start-up); one core: checks {fast1.check_seconds:.2f}s ({naive.seconds / fast1.check_seconds:.1f}x); "
            f"verdict mismatches {len(mismatches)}/{len(mismatches1)}"
        )
    total = sum(r["candidates"] for r in rows)
    naive_s = sum(r["naive_seconds"] for r in rows)
    check_s = sum(r["fast_check_seconds"] for r in rows)
    startup_s = sum(r["fast_startup_seconds"] for r in rows)
    check1_s = sum(r["fast1_check_seconds"] for r in rows)
    startup1_s = sum(r["fast1_startup_seconds"] for r in rows)

    def rate(seconds: float) -> float:
        return total / seconds if seconds else 0.0

    summary = {
        "tasks": len(rows),
        "candidates": total,
        "naive_per_second": rate(naive_s),
        "fast_per_second": rate(check_s),
        "fast_with_startup_per_second": rate(check_s + startup_s),
        "fast1_per_second": rate(check1_s),
        "fast1_with_startup_per_second": rate(check1_s + startup1_s),
        "ratio": naive_s / check_s if check_s else 0.0,
        "ratio_with_startup": naive_s / (check_s + startup_s) if check_s else 0.0,
        "ratio_one_core": naive_s / check1_s if check1_s else 0.0,
        "ratio_one_core_with_startup": naive_s / (check1_s + startup1_s) if check1_s else 0.0,
        "startup_seconds_per_task": startup_s / len(rows) if rows else 0.0,
        "mismatches": sum(len(r["mismatches"]) for r in rows),
        "mismatches_one_core": sum(len(r["mismatches_fast1"]) for r in rows),
        "rows": rows,
    }
    log(
        f"\n{len(rows)} tasks, {total} candidates: naive {summary['naive_per_second']:.3f}/s; fast "
        f"{summary['fast_per_second']:.2f}/s per candidate = {summary['ratio']:.1f}x "
        f"(with the hot worker's start-up, {summary['startup_seconds_per_task']:.2f}s per task: "
        f"{summary['fast_with_startup_per_second']:.2f}/s = {summary['ratio_with_startup']:.1f}x); one core "
        f"{summary['fast1_per_second']:.2f}/s = {summary['ratio_one_core']:.1f}x "
        f"({summary['ratio_one_core_with_startup']:.1f}x with start-up); "
        f"verdict mismatches {summary['mismatches']} (one core: {summary['mismatches_one_core']})"
    )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Validation speed: fast path vs naive path, side by side.")
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--tasks", dest="count_tasks", type=int, default=8, help="tasks to use (spread evenly)")
    parser.add_argument("--candidates", type=int, default=25, help="candidates per task")
    parser.add_argument("--match", default="", help="only task ids containing this")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument(
        "--limit-factor",
        type=float,
        default=LoopConfig().candidate_limit_factor,
        help="adaptive candidate wall limit: this x the tests' baseline seconds (floor 2 s); 0 = off (60 s limit)",
    )
    args = parser.parse_args(argv)
    tasks = [t for t in load_tasks(args.tasks) if args.match in t.id]
    step = max(1, len(tasks) // max(1, args.count_tasks))
    chosen = tasks[::step][: args.count_tasks]
    summary = measure(chosen, args.candidates, log=lambda m: print(m, flush=True), limit_factor=args.limit_factor)
    summary["limit_factor"] = args.limit_factor
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return 0 if summary["mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
