"""Learning, measured honestly: the candidate order learned from the benchmark's traces and the memory of past
fixes, each against its baseline on a split by project (fit or fill on one library, measure on the other, then
swap), paired by task.

    python -m selfix_bench.learning bench/tasks --out results/learning [--per-project N] [--live N]

1. **collect** (cached in ``OUT/candidates/``): every task is reproduced and localized by the real heal pipeline
   (the offline engine's hypotheses, real coverage), and every candidate the engine generates for its
   hypotheses is recorded with its features, in generation order, none tried. A candidate is *the fix* when
   its program is the task's original code (same AST as the reference fix). One process per task, two at once.
2. **replay**: the engine's own ordering function (``offline.ordering.ordered``) puts each task's candidates
   in the order a configuration would try them; "candidates to the fix" is the fix's position (over the
   hypotheses in order, within the 500-candidate budget). Configurations: hand priors; the order model fitted
   on the *other* library; the memory off, the memory filled with the other library's heals (and, as a
   repository's own memory grows, with the earlier tasks of this one), the old similarity memory.
3. **reward model** (``learn.reward_model``): fitted on one library's replayed hypotheses, scored on the other's.
4. **live** (``--live N``, optional): N tasks per library healed for real (verification, judge) with the hand
   priors, the learned order, and the learned order with the other library's memory: resolve rate and time.

Writes ``OUT/learning.json`` (every figure and per-task row) and ``OUT/learning.md``; ``--ship PATH`` writes the
order model fitted on all tasks (shipped as ``selfix_action/offline/candidate_order.json``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfix_action.learn import ranker
from selfix_action.learn import reward_model as reward_model
from selfix_action.learn.memory import Memory
from selfix_action.learn.runs import Attempt, HypothesisOutcome, RunRecord
from selfix_action.offline.engine import OfflineEngine
from selfix_action.offline.ordering import OrderModel, RankedCandidate, load_order_model, ordered
from selfix_action.offline.templates.render import SourceEdit
from selfix_action.repair.fingerprint import FailureSignature, failure_signature
from selfix_action.repair.loop import LoopConfig
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.values import Evidence, Hypothesis, Verification
from selfix_bench.stats import mcnemar_exact, wilson_interval
from selfix_bench.tasks import Task, load_task, load_tasks

ORDER_MODEL_ENV = "SELFIX_LEARNING_ORDER_MODEL"  # the live runs' held-out model, read by learned_engine
BUDGET = 500  # candidates per task, the benchmark's default
COLLECT_SECONDS = 300.0
Log = Callable[[str], None]


# -- 1. collect ---------------------------------------------------------------------------------------------
class RecordingEngine(OfflineEngine):
    """The offline engine that records every candidate of every hypothesis and tries none of them."""

    def __init__(self) -> None:
        super().__init__(order_model=None)
        self.records: list[dict[str, Any]] = []
        self.signatures: list[FailureSignature] = []
        self.suspects: list[str] = []

    def candidates(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, history: Sequence[Verification]
    ) -> Any:
        if not self.signatures:
            self.signatures = [failure_signature(f) for f in evidence.failures[:10]]
            ranked = [f"{s.file}:{s.function or '<module>'}" for s in evidence.suspicious_lines]
            self.suspects = list(dict.fromkeys(ranked))
        items = self.ranked(hypothesis, evidence, sandbox)
        self.records.append(
            {
                "hypothesis": hypothesis.model_dump(mode="json"),
                "candidates": [
                    {
                        "template": i.edit.template,
                        "prior": i.edit.prior,
                        "line": i.line,
                        "line_order": i.line_order,
                        "suspiciousness": i.suspiciousness,
                        "fan_out": i.fan_out,
                        "generated": i.generated,
                        "features": {k: round(v, 5) for k, v in i.features.items()},
                        "normalized_sha": hashlib.sha1(i.edit.normalized.encode()).hexdigest()[:16],
                        "_source": i.edit.new_source if hypothesis.file else "",
                    }
                    for i in items
                ],
            }
        )
        return iter(())


def _program(text: str) -> str | None:
    try:
        return ast.dump(ast.parse(text))
    except (SyntaxError, ValueError):
        return None


def collect_one(task: Task, out: Path) -> dict[str, Any]:
    """Reproduce and localize one task with the real pipeline; record its candidates, labelled."""
    from selfix_action.heal import HealContext, HealRequest, heal_in_sandbox
    from selfix_action.sandbox.isolation import no_isolation
    from selfix_action.sandbox.process import Limits

    engine = RecordingEngine()
    python = task.python()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="selfix-learn-") as tmp:
        repo = task.materialize(Path(tmp) / "repo")
        reference = _program(task.reference_fix()[0][task.bug.path])
        request = HealRequest(
            repo=repo,
            test_cmd=(python, "-m", "pytest"),
            out_dir=Path(tmp) / "out",
            loop=LoopConfig(time_limit_seconds=COLLECT_SECONDS, user_hint=task.bug_report),
            limits=Limits(wall_seconds=60),
            jobs=1,
            repo_label=task.id,
        )
        context = HealContext(request, engine, no_isolation("benchmark tasks"), lambda *a, **k: None, None, (), ())
        result = heal_in_sandbox(context)
    for record in engine.records:
        on_bug_file = record["hypothesis"]["file"] == task.bug.path
        for cand in record["candidates"]:
            source = cand.pop("_source")
            near = abs(cand["line"] - task.bug.line) <= 3
            cand["fix"] = bool(on_bug_file and near and reference is not None and _program(source) == reference)
    data = {
        "id": task.id,
        "library": str(task.source.get("name", task.source.get("kind"))),
        "bug_template": task.bug.template,
        "stop_reason": result.report.stop_reason.value,
        "signatures": [s.model_dump() for s in engine.signatures],
        "suspects": engine.suspects,
        "hypotheses": engine.records,
        "seconds": round(time.monotonic() - started, 3),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".tmp")
    tmp_out.write_text(json.dumps(data) + "\n", encoding="utf-8")
    os.replace(tmp_out, out)
    return data


def collect(tasks: Sequence[Task], out: Path, workers: int, log: Log) -> list[dict[str, Any]]:
    from selfix_bench.runner import run_module

    folder = out / "candidates"
    folder.mkdir(parents=True, exist_ok=True)
    from selfix_bench.runner import _interleave

    pending = _interleave([t for t in tasks if not (folder / f"{t.id}.json").exists()])
    log(f"collect: {len(tasks)} task(s), {len(tasks) - len(pending)} cached, {len(pending)} to localize")

    def one(task: Task) -> None:
        argv = [
            "selfix_bench.learning",
            "collect-one",
            str(Path(task.base_dir) / f"{task.id}.json"),
            str(folder / f"{task.id}.json"),
        ]
        code, tail = run_module(argv, COLLECT_SECONDS + 180)
        log(f"  {task.id}: {'ok' if code == 0 else f'failed ({code}): {tail}'}")

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, pending))
    return [json.loads((folder / f"{t.id}.json").read_text()) for t in tasks if (folder / f"{t.id}.json").exists()]


# -- 2. replay ------------------------------------------------------------------------------------------------
def _items(hyp: Mapping[str, Any]) -> list[RankedCandidate]:
    out = []
    for c in hyp["candidates"]:
        edit = SourceEdit(
            path=hyp["hypothesis"]["file"],
            template=c["template"],
            description="",
            line=c["line"],
            prior=c["prior"],
            new_source="",
            normalized=c["normalized_sha"],
        )
        item = RankedCandidate(
            edit=edit,
            line=c["line"],
            line_order=c["line_order"],
            suspiciousness=c["suspiciousness"],
            fan_out=c["fan_out"],
            features=c["features"],
            generated=c["generated"],
        )
        item.fix = c["fix"]  # type: ignore[attr-defined]
        out.append(item)
    return out


@dataclass
class Replay:
    """One task under one configuration: what the engine would try, up to the fix or the budget."""

    task: str
    library: str
    to_fix: int | None  # candidates tried up to and including the fix; None: not within the budget
    tried: int
    run: RunRecord


Boosts = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, float]]


def replay(
    task: Mapping[str, Any],
    model: OrderModel | None,
    boosts: Boosts | None = None,
    *,
    boost_first: bool = False,
    budget: int = BUDGET,
) -> Replay:
    tried = 0
    hypotheses = []
    boosted: dict[str, list[str]] = {}
    to_fix: int | None = None
    fixed_by = ""
    for hyp in task["hypotheses"]:
        h = hyp["hypothesis"]
        boost = dict(boosts(task, h)) if boosts is not None and hyp["candidates"] else {}
        if boost:
            boosted[h["id"]] = sorted(boost)
        outcome = HypothesisOutcome(
            id=h["id"],
            rank=h["rank"],
            confidence=h["confidence"],
            title=h["title"],
            file=h["file"],
            symbol=h["symbol"],
            lines=list(h["lines"]),
            reached=True,
            exposed=True,
        )
        hypotheses.append(outcome)
        for item in ordered(_items(hyp), boost, model, boost_first=boost_first):
            if tried >= budget:
                break
            tried += 1
            fix = bool(item.fix)  # type: ignore[attr-defined]
            outcome.attempts.append(
                Attempt(
                    candidate=f"{h['id']}-C{tried}",
                    template=item.edit.template,
                    ok=fix,
                    stage="verified" if fix else "fail_to_pass",
                    prior=item.edit.prior,
                )
            )
            if fix:
                to_fix, fixed_by, outcome.fixed = tried, item.edit.template, True
                break
        if to_fix is not None or tried >= budget:
            break
    signatures = [FailureSignature.model_validate(s) for s in task["signatures"]]
    run = RunRecord(
        run_id=task["id"],
        repo=task["id"],
        engine="offline",
        healed=to_fix is not None,
        stop_reason="healed" if to_fix is not None else "hypotheses_exhausted",
        signatures=signatures,
        fingerprint=signatures[0].fingerprint if signatures else "",
        hypotheses=hypotheses,
        candidates=tried,
        patch_template=fixed_by,
        suspects=task["suspects"],
        boosted=boosted,
    )
    return Replay(task["id"], task["library"], to_fix, tried, run)


def memory_boosts(memory: Memory, old: bool) -> Boosts:
    def boosts(task: Mapping[str, Any], hypothesis: Mapping[str, Any]) -> Mapping[str, float]:
        signatures = [FailureSignature.model_validate(s) for s in task["signatures"]]
        if old:  # the previous rule: failure similarity alone, for the whole run
            return memory.boosted_templates(signatures)
        return memory.boosts_for(signatures, hypothesis["file"], hypothesis["symbol"])

    return boosts


def run_with_memory(
    fill: Sequence[Mapping[str, Any]],
    measure: Sequence[Mapping[str, Any]],
    model: OrderModel | None,
    folder: Path,
    *,
    old: bool = False,
    grow: bool = False,
    min_evidence: float | None = None,
) -> list[Replay]:
    """Fill a fresh memory with ``fill``'s heals (each replayed with the memory as it stood), then measure
    ``measure``; with ``grow`` each measured task is recorded afterwards, as a repository's memory grows."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"memory-{hashlib.sha1(os.urandom(8)).hexdigest()[:8]}.db"
    clock = iter(range(1_000_000, 10_000_000, 60))
    kwargs = {"min_evidence": min_evidence} if min_evidence is not None else {}
    memory = Memory(path, clock=lambda: float(next(clock)), **kwargs)  # type: ignore[arg-type]
    try:
        boosts = memory_boosts(memory, old)
        for task in fill:
            memory.record(replay(task, model, boosts, boost_first=old).run)
        results = []
        for task in measure:
            result = replay(task, model, boosts, boost_first=old)
            results.append(result)
            if grow:
                memory.record(result.run)
        return results
    finally:
        memory.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)


THRESHOLDS = (0.25, 0.5, 1.0)  # same file | same function or failure | same failure at the same function


def calibrate_threshold(records: Sequence[Mapping[str, Any]], model: OrderModel | None, folder: Path) -> float:
    """The weakest evidence worth a boost, chosen on ``records`` alone: each threshold's memory grows over
    them task by task; the one with the most fixes, then the fewest candidates to them, wins (ties: stricter)."""

    def cost(threshold: float) -> tuple[int, int, float]:
        results = run_with_memory([], records, model, folder, grow=True, min_evidence=threshold)
        found = [r.to_fix for r in results if r.to_fix is not None]
        return (-len(found), sum(found), -threshold)

    return min(THRESHOLDS, key=cost)


# -- statistics -----------------------------------------------------------------------------------------------
def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test (ties dropped): the same binomial as McNemar's."""
    return mcnemar_exact(better, worse)


def paired(a: Sequence[Replay], b: Sequence[Replay]) -> dict[str, Any]:
    """B against A, task by task: resolve counts (McNemar) and candidates to the fix on tasks both resolve."""
    by_a = {r.task: r for r in a}
    pairs = [(by_a[r.task], r) for r in b if r.task in by_a]
    # Candidates to the fix, A's and B's, on the tasks both resolve.
    both = [(x.to_fix, y.to_fix) for x, y in pairs if x.to_fix is not None and y.to_fix is not None]
    fewer = sum(1 for x, y in both if y < x)
    more = sum(1 for x, y in both if y > x)
    only_a = sum(1 for x, y in pairs if x.to_fix is not None and y.to_fix is None)
    only_b = sum(1 for x, y in pairs if y.to_fix is not None and x.to_fix is None)
    resolved_a = sum(1 for x, _ in pairs if x.to_fix is not None)
    resolved_b = sum(1 for _, y in pairs if y.to_fix is not None)
    return {
        "tasks": len(pairs),
        "resolved_a": resolved_a,
        "resolved_b": resolved_b,
        "ci_a": [round(v, 3) for v in wilson_interval(resolved_a, len(pairs))],
        "ci_b": [round(v, 3) for v in wilson_interval(resolved_b, len(pairs))],
        "only_a": only_a,
        "only_b": only_b,
        "mcnemar_p": round(mcnemar_exact(only_a, only_b), 4),
        "both": len(both),
        "median_a": statistics.median([x for x, _ in both]) if both else None,
        "median_b": statistics.median([y for _, y in both]) if both else None,
        "total_a": sum(x for x, _ in both),
        "total_b": sum(y for _, y in both),
        "fewer": fewer,
        "more": more,
        "same": len(both) - fewer - more,
        "sign_p": sign_test(fewer, more),
    }


# -- 3. the reward model, by project ------------------------------------------------------------------------------
def reward_split(train_runs: Sequence[RunRecord], test_runs: Sequence[RunRecord]) -> dict[str, Any]:
    data = reward_model.examples(train_runs)
    test = reward_model.examples(test_runs)
    weights, bias, means, stds = reward_model.fit([x for _, x, _, _ in data], [y for _, _, y, _ in data])
    fitted = {"weights": weights, "bias": bias, "mean": means, "std": stds}
    base_rate = sum(y for _, _, y, _ in data) / len(data) if data else 0.0
    return {
        "train": reward_model.evaluate(fitted, data),
        "held_out": reward_model.evaluate(fitted, test),
        "held_out_constant_baseline_accuracy": round(
            sum((base_rate >= 0.5) == bool(y) for _, _, y, _ in test) / len(test), 4
        )
        if test
        else None,
    }


# -- 4. live heals ---------------------------------------------------------------------------------------------
def priors_engine() -> OfflineEngine:
    """The offline engine with the hand priors (``selfix bench --engine`` factory)."""
    return OfflineEngine(order_model=None)


def learned_engine() -> OfflineEngine:
    """The offline engine with the order model at ``$SELFIX_LEARNING_ORDER_MODEL`` (the held-out fold's)."""
    path = os.environ.get(ORDER_MODEL_ENV, "")
    model = load_order_model(Path(path)) if path else None
    if model is None:
        raise SystemExit(f"{ORDER_MODEL_ENV} names no readable order model: {path!r}")
    return OfflineEngine(order_model=model)


def live(
    records: Sequence[Mapping[str, Any]], tasks: Sequence[Task], per_project: int, out: Path, workers: int, log: Log
) -> dict[str, Any]:
    """Heal ``per_project`` tasks of each library for real, hand priors vs the order fitted on the other library."""
    from selfix_bench.runner import BenchOptions, read_records, run_bench

    by_id = {t.id: t for t in tasks}
    libraries = sorted({r["library"] for r in records})
    rows: list[dict[str, Any]] = []
    for train_lib, test_lib in ((libraries[0], libraries[1]), (libraries[1], libraries[0])):
        folder = out / "live" / f"tasks-{test_lib}"
        folder.mkdir(parents=True, exist_ok=True)
        chosen = [r["id"] for r in records if r["library"] == test_lib][:per_project]
        for task_id in chosen:
            text = (Path(by_id[task_id].base_dir) / f"{task_id}.json").read_text(encoding="utf-8")
            (folder / f"{task_id}.json").write_text(text, encoding="utf-8")
        model_path = out / "live" / f"order-fitted-on-{train_lib}.json"
        ranker.save(ranker.fit_order_model([r for r in records if r["library"] == train_lib]), model_path)
        os.environ[ORDER_MODEL_ENV] = str(model_path.resolve())
        runs = {}
        module = "selfix_bench.learning"  # not __name__: that is __main__ under python -m
        for name, mode in (("priors", f"{module}:priors_engine"), ("learned", f"{module}:learned_engine")):
            options = BenchOptions(
                tasks=folder, out=out / "live", run=f"{name}-{test_lib}", mode=mode, workers=workers, time_limit=180
            )
            records_path = run_bench(options, log) / "results.jsonl"
            runs[name] = {r["id"]: r for r in read_records(records_path) if r.get("mode") == mode}
        for task_id in chosen:
            a, b = runs["priors"].get(task_id, {}), runs["learned"].get(task_id, {})
            rows.append(
                {
                    "task": task_id,
                    "library": test_lib,
                    "priors": {k: a.get(k) for k in ("resolved", "candidates", "seconds", "test_runs")},
                    "learned": {k: b.get(k) for k in ("resolved", "candidates", "seconds", "test_runs")},
                }
            )
    both = [r for r in rows if r["priors"]["resolved"] and r["learned"]["resolved"]]
    faster = sum(1 for r in both if r["learned"]["seconds"] < r["priors"]["seconds"])
    fewer = sum(1 for r in both if r["learned"]["candidates"] < r["priors"]["candidates"])
    more = sum(1 for r in both if r["learned"]["candidates"] > r["priors"]["candidates"])
    only_a = sum(1 for r in rows if r["priors"]["resolved"] and not r["learned"]["resolved"])
    only_b = sum(1 for r in rows if r["learned"]["resolved"] and not r["priors"]["resolved"])
    return {
        "tasks": len(rows),
        "resolved_priors": sum(1 for r in rows if r["priors"]["resolved"]),
        "resolved_learned": sum(1 for r in rows if r["learned"]["resolved"]),
        "mcnemar_p": round(mcnemar_exact(only_a, only_b), 4),
        "both": len(both),
        "median_candidates": [
            statistics.median([r["priors"]["candidates"] for r in both]) if both else None,
            statistics.median([r["learned"]["candidates"] for r in both]) if both else None,
        ],
        "median_seconds": [
            statistics.median([r["priors"]["seconds"] for r in both]) if both else None,
            statistics.median([r["learned"]["seconds"] for r in both]) if both else None,
        ],
        "fewer": fewer,
        "more": more,
        "sign_p": sign_test(fewer, more),
        "faster": faster,
        "slower": len(both) - faster,
        "time_sign_p": sign_test(faster, len(both) - faster),
        "rows": rows,
    }


# -- the whole evaluation --------------------------------------------------------------------------------------------
def stratified(tasks: Sequence[Task], per_project: int) -> list[Task]:
    """The first ``per_project`` tasks of every library (task ids are opaque digests: an arbitrary sample)."""
    if per_project <= 0:
        return list(tasks)
    out: list[Task] = []
    counts: dict[str, int] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        library = str(task.source.get("name", task.source.get("kind")))
        if counts.get(library, 0) < per_project:
            counts[library] = counts.get(library, 0) + 1
            out.append(task)
    return out


def evaluate(records: Sequence[dict[str, Any]], folder: Path, log: Log) -> dict[str, Any]:
    libraries = sorted({r["library"] for r in records})
    if len(libraries) != 2:
        raise SystemExit(f"the project split needs exactly two libraries, got {libraries}")
    folds = []
    rows: list[dict[str, Any]] = []
    priors_all: list[Replay] = []
    learned_all: list[Replay] = []
    mem: dict[str, list[Replay]] = {
        k: [] for k in ("off", "filled", "grown", "old", "grown_function", "grown_file", "calibrated")
    }
    thresholds: list[dict[str, Any]] = []
    rewards = []
    for train_lib, test_lib in ((libraries[0], libraries[1]), (libraries[1], libraries[0])):
        train = [r for r in records if r["library"] == train_lib]
        test = [r for r in records if r["library"] == test_lib]
        started = time.monotonic()
        fitted = ranker.fit_order_model(train)
        model = OrderModel(fitted)
        log(f"fold train={train_lib} test={test_lib}: model fitted in {time.monotonic() - started:.1f}s")
        priors = [replay(t, None) for t in test]
        learned = [replay(t, model) for t in test]
        priors_all += priors
        learned_all += learned
        # The memory, under the order that ships (the learned one, fitted without this library).
        mem["off"] += learned
        mem["filled"] += run_with_memory(train, test, model, folder)
        mem["grown"] += run_with_memory(train, test, model, folder, grow=True)
        mem["grown_function"] += run_with_memory(train, test, model, folder, grow=True, min_evidence=0.5)
        mem["grown_file"] += run_with_memory(train, test, model, folder, grow=True, min_evidence=0.25)
        # The evidence threshold calibrated on the training library alone (its own memory growing task by task),
        # then applied to the held-out library.
        threshold = calibrate_threshold(train, model, folder)
        thresholds.append({"train": train_lib, "test": test_lib, "min_evidence": threshold})
        mem["calibrated"] += run_with_memory(train, test, model, folder, grow=True, min_evidence=threshold)
        mem["old"] += run_with_memory(train, test, None, folder, old=True, grow=True)
        rewards.append(
            {
                "train_library": train_lib,
                "test_library": test_lib,
                **reward_split([replay(t, None).run for t in train], [p.run for p in priors]),
            }
        )
        folds.append({"train": train_lib, "test": test_lib, "order": paired(priors, learned)})
        for p, q in zip(priors, learned, strict=True):
            rows.append({"task": p.task, "library": p.library, "priors": p.to_fix, "learned": q.to_fix})
    priors_old = [r for r in mem["old"]]
    return {
        "tasks": len(records),
        "libraries": libraries,
        "fix_generated": sum(1 for r in records if any(c["fix"] for h in r["hypotheses"] for c in h["candidates"])),
        "order": paired(priors_all, learned_all),
        "folds": folds,
        "memory": {
            "filled_vs_off": paired(mem["off"], mem["filled"]),
            "grown_vs_off": paired(mem["off"], mem["grown"]),
            "grown_function_or_failure_vs_off": paired(mem["off"], mem["grown_function"]),
            "grown_same_file_vs_off": paired(mem["off"], mem["grown_file"]),
            "calibrated_vs_off": paired(mem["off"], mem["calibrated"]),
            "thresholds": thresholds,
            "old_similarity_vs_priors_off": paired(priors_all, priors_old),
        },
        "reward_model": rewards,
        "rows": rows,
    }


def _row_a(name: str, p: Mapping[str, Any]) -> str:
    return f"| {name} | {p['resolved_a']}/{p['tasks']} | {p['median_a']} | {p['total_a']} | |"


def _row_b(name: str, p: Mapping[str, Any]) -> str:
    return (
        f"| {name} | {p['resolved_b']}/{p['tasks']} | {p['median_b']} | {p['total_b']} | "
        f"{p['fewer']} fewer, {p['more']} more, {p['same']} same: sign test p = {p['sign_p']:.2g}; "
        f"resolved only without {p['only_a']}, only with {p['only_b']}: McNemar p = {p['mcnemar_p']:.2g} |"
    )


def render(result: Mapping[str, Any]) -> str:
    head = "| configuration | fix within 500 | median candidates to the fix (both) | total (both) | paired |"
    rule = "|---|---:|---:|---:|---|"
    order = result["order"]
    out = [
        f"Tasks: {result['tasks']} ({', '.join(result['libraries'])}); the fix is among the generated "
        f"candidates in {result['fix_generated']}.",
        "",
        "Learned order vs hand priors (order fitted on the other library):",
        "",
        head,
        rule,
        _row_a("hand priors", order),
        _row_b("**learned order**", order),
        "",
    ]
    for fold in result["folds"]:
        o = fold["order"]
        out.append(
            f"- fit on {fold['train']}, measured on {fold['test']}: median {o['median_a']} -> "
            f"{o['median_b']}, {o['fewer']} fewer / {o['more']} more, p = {o['sign_p']:.2g}"
        )
    memory = result["memory"]
    out += [
        "",
        "Memory on vs off (learned order fitted on the other library; paired with memory off):",
        "",
        head,
        rule,
        _row_a("memory off", memory["filled_vs_off"]),
        _row_b("filled by the other library (default evidence: same failure, same function)", memory["filled_vs_off"]),
        _row_b("the other library + the earlier tasks of this one (default evidence)", memory["grown_vs_off"]),
        _row_b("same, evidence >= same function or same failure", memory["grown_function_or_failure_vs_off"]),
        _row_b("same, evidence >= same file", memory["grown_same_file_vs_off"]),
        _row_b("same, evidence threshold calibrated on the other library", memory["calibrated_vs_off"]),
        "",
        "The previous memory (similarity boost, ahead of suspiciousness), hand priors, paired with hand priors off:",
        "",
        head,
        rule,
        _row_a("hand priors, memory off", memory["old_similarity_vs_priors_off"]),
        _row_b("previous memory, grown the same way", memory["old_similarity_vs_priors_off"]),
        "",
    ]
    out.append(
        "Calibrated evidence thresholds: "
        + ", ".join(f"{t['min_evidence']} (chosen on {t['train']}, used on {t['test']})" for t in memory["thresholds"])
    )
    out += ["", "Reward model (fitted on one library's hypotheses, scored on the other's):"]
    for r in result["reward_model"]:
        h = r["held_out"]
        out.append(
            f"- {r['train_library']} -> {r['test_library']}: held-out n={h.get('n')}, accuracy {h.get('accuracy')} "
            f"(constant baseline {r['held_out_constant_baseline_accuracy']}), log loss {h.get('log_loss')}, "
            f"r(prob, reward) {h.get('pearson_prob_reward')}; on its training data accuracy "
            f"{r['train'].get('accuracy')}"
        )
    if "live" in result:
        lv = result["live"]
        out += [
            "",
            f"Live heals ({lv['tasks']} tasks, real verification and judge; order fitted on the other library):",
            f"- resolved: hand priors {lv['resolved_priors']}, learned {lv['resolved_learned']} "
            f"(McNemar p = {lv['mcnemar_p']:.2g})",
            f"- on the {lv['both']} resolved by both: median candidates {lv['median_candidates'][0]} -> "
            f"{lv['median_candidates'][1]} ({lv['fewer']} fewer, {lv['more']} more, p = {lv['sign_p']:.2g}); "
            f"median seconds {lv['median_seconds'][0]} -> {lv['median_seconds'][1]} ({lv['faster']} faster, "
            f"{lv['slower']} slower, p = {lv['time_sign_p']:.2g})",
        ]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["collect-one"]:
        collect_one(load_task(Path(args[1])), Path(args[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", type=Path, nargs="?", default=Path("bench/tasks"))
    parser.add_argument("--out", type=Path, default=Path("results/learning"))
    parser.add_argument("--per-project", type=int, default=0, help="tasks per library (0: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--live", type=int, default=0, help="also heal N tasks per library for real (0: none)")
    parser.add_argument("--cached", action="store_true", help="evaluate the tasks already collected, collect none")
    parser.add_argument("--ship", type=Path, help="write the order model fitted on all tasks here")
    options = parser.parse_args(args)
    log: Log = lambda m: print(m, flush=True)  # noqa: E731
    tasks = stratified(load_tasks(options.tasks), options.per_project)
    if options.cached:
        tasks = [t for t in tasks if (options.out / "candidates" / f"{t.id}.json").exists()]
    records = collect(tasks, options.out, options.workers, log)
    result = evaluate(records, options.out, log)
    if options.live:
        result["live"] = live(records, tasks, options.live, options.out, options.workers, log)
    (options.out / "learning.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text = render(result)
    (options.out / "learning.md").write_text(text, encoding="utf-8")
    print(text)
    if options.ship is not None:
        ranker.save(ranker.fit_order_model(records), options.ship)
        log(f"wrote {options.ship}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
