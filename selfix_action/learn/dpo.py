"""Preference pairs for DPO from a corpus of traces, and a corpus summary.

Every row has TRL ``DPOTrainer``'s standard (non-conversational) columns ``prompt``, ``chosen`` and
``rejected`` (strings), plus ``margin`` (reward of chosen minus reward of rejected), ``kind`` and
``provenance`` (run, trace file, ids and rewards: same keys and types in every row, so ``datasets`` infers one
schema). Two kinds of pair:

- ``hypothesis``: two hypotheses of one run (Detective): the prompt is the recorded Detective prompt when the
  run used a model, else the evidence (failing tests, frames, suspicious lines); chosen/rejected are the
  hypotheses as the Detective states them.
- ``patch``: a verified patch against failed attempts for the same hypothesis (Patcher), at most
  ``MAX_PATCH_REJECTIONS`` per hypothesis, in attempt order.

Pairs are kept only when ``margin > threshold``; identical (prompt, chosen, rejected) triples are kept once;
rows are sorted by a content key, so the output does not depend on the order of the input files.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from selfix_action.learn.reward import attempt_reward, hypothesis_reward
from selfix_action.learn.runs import HypothesisOutcome, RunRecord, summarize
from selfix_action.learn.trace_schema import TraceError, expand_paths, read_trace

DEFAULT_THRESHOLD = 0.2
MAX_PATCH_REJECTIONS = 5
DPO_COLUMNS = ("prompt", "chosen", "rejected")
DETECTIVE_ASK = "\n\nWhat is the most likely root cause? Answer with one hypothesis: title, location, fix."


def hypothesis_text(h: HypothesisOutcome) -> str:
    lines = f" lines {min(h.lines)}-{max(h.lines)}" if h.lines else ""
    out = [f"Hypothesis: {h.title}", f"Location: {h.file} `{h.symbol}`{lines}"]
    if h.reasoning:
        out.append(f"Reasoning: {h.reasoning}")
    if h.proposed_fix:
        out.append(f"Fix: {h.proposed_fix}")
    return "\n".join(out)


def _prompt(run: RunRecord) -> str:
    return (run.detective_prompt or run.evidence) + DETECTIVE_ASK


def _row(
    run: RunRecord, kind: str, prompt: str, chosen: tuple[str, str, float], rejected: tuple[str, str, float]
) -> dict[str, Any]:
    return {
        "prompt": prompt,
        "chosen": chosen[1],
        "rejected": rejected[1],
        "margin": round(chosen[2] - rejected[2], 6),
        "kind": kind,
        "provenance": {
            "run_id": run.run_id,
            "trace": run.path,
            "repo": run.repo,
            "engine": run.engine,
            "fingerprint": run.fingerprint,
            "chosen_id": chosen[0],
            "rejected_id": rejected[0],
            "chosen_reward": round(chosen[2], 6),
            "rejected_reward": round(rejected[2], 6),
        },
    }


def run_pairs(run: RunRecord, threshold: float = DEFAULT_THRESHOLD) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    prompt = _prompt(run)
    scored = []
    for h in run.hypotheses:
        reward = hypothesis_reward(h)
        if reward is not None:
            scored.append((h.id, hypothesis_text(h), reward.total))
    for a in scored:
        for b in scored:
            if a[2] - b[2] > threshold:
                rows.append(_row(run, "hypothesis", prompt, a, b))
    for h in run.hypotheses:
        winners = [x for x in h.attempts if x.ok]
        if not h.fixed or not winners:
            continue
        win = winners[-1]
        patch_prompt = f"{run.evidence}\n\n{hypothesis_text(h)}\n\nPropose the smallest edit that fixes it."
        chosen = (win.candidate, win.description, attempt_reward(True, win.stage))
        for failed in [x for x in h.attempts if not x.ok][:MAX_PATCH_REJECTIONS]:
            rejected = (failed.candidate, failed.description, attempt_reward(False, failed.stage))
            if chosen[2] - rejected[2] > threshold and chosen[1] != rejected[1]:
                rows.append(_row(run, "patch", patch_prompt, chosen, rejected))
    return rows


def _key(row: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([row[c] for c in DPO_COLUMNS]).encode()).hexdigest()


def load_runs(paths: Iterable[str | Path], warn: list[str]) -> list[RunRecord]:
    runs = []
    for path in expand_paths(paths):
        try:
            trace = read_trace(path)
        except TraceError as exc:
            warn.append(str(exc))
            continue
        if trace.truncated:
            warn.append(f"{path}: last line truncated, skipped")
        runs.append(summarize(trace))
    return runs


def dpo_rows(runs: Sequence[RunRecord], threshold: float = DEFAULT_THRESHOLD) -> list[dict[str, Any]]:
    """Deduplicated, deterministically ordered preference rows from ``runs``."""
    unique: dict[str, dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: (r.path, r.run_id)):
        for row in run_pairs(run, threshold):
            unique.setdefault(_key(row), row)
    return [unique[k] for k in sorted(unique)]


def write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> int:
    count = 0
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
            count += 1
    tmp.replace(path)
    return count


def corpus_stats(runs: Sequence[RunRecord]) -> dict[str, Any]:
    """Runs, heal rate, hypotheses by outcome, rank of the fixing hypothesis, candidates, tokens, cost."""
    healed = [r for r in runs if r.healed]
    hyps = [h for r in runs for h in r.hypotheses]
    fix_ranks = Counter(h.rank for h in hyps if h.fixed)
    candidates = [r.candidates for r in runs]
    templates = Counter(r.patch_template for r in healed if r.patch_template)
    return {
        "runs": len(runs),
        "healed": len(healed),
        "heal_rate": round(len(healed) / len(runs), 4) if runs else 0.0,
        "engines": dict(sorted(Counter(r.engine for r in runs).items())),
        "stop_reasons": dict(sorted(Counter(r.stop_reason for r in runs).items())),
        "distinct_fingerprints": len({r.fingerprint for r in runs if r.fingerprint}),
        "hypotheses": {
            "total": len(hyps),
            "reached": sum(h.reached for h in hyps),
            "exposed": sum(h.exposed for h in hyps),
            "fixed": sum(h.fixed for h in hyps),
        },
        "fix_rank": {str(k): v for k, v in sorted(fix_ranks.items())},
        "candidates": {
            "total": sum(candidates),
            "median": statistics.median(candidates) if candidates else 0,
            "max": max(candidates, default=0),
        },
        "fix_templates": dict(templates.most_common()),
        "tokens": sum(r.tokens for r in runs),
        "cost_usd": round(sum(r.cost_usd for r in runs), 6),
        "truncated_traces": sum(r.truncated for r in runs),
    }


def render_stats(stats: dict[str, Any]) -> str:
    h = stats["hypotheses"]
    c = stats["candidates"]
    lines = [
        f"runs: {stats['runs']}, healed: {stats['healed']} ({stats['heal_rate']:.0%})",
        f"engines: {', '.join(f'{k} {v}' for k, v in stats['engines'].items()) or '-'}",
        f"stop reasons: {', '.join(f'{k} {v}' for k, v in stats['stop_reasons'].items()) or '-'}",
        f"distinct failure fingerprints: {stats['distinct_fingerprints']}",
        f"hypotheses: {h['total']} ({h['reached']} reached, {h['exposed']} exposed, {h['fixed']} fixed)",
        f"rank of the fixing hypothesis: {', '.join(f'#{k}: {v}' for k, v in stats['fix_rank'].items()) or '-'}",
        f"candidates: {c['total']} total, median {c['median']} per run, max {c['max']}",
        f"fix templates: {', '.join(f'{k} {v}' for k, v in stats['fix_templates'].items()) or '-'}",
        f"tokens: {stats['tokens']}, cost: ${stats['cost_usd']:.4f}",
    ]
    if stats["truncated_traces"]:
        lines.append(f"traces with a truncated last line: {stats['truncated_traces']}")
    return "\n".join(lines) + "\n"
