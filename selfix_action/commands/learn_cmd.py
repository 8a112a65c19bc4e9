"""``selfix export dpo|stats``, ``selfix learn`` and ``selfix view``: the learning layer's commands."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from selfix_action.errors import InputError
from selfix_action.learn.dpo import corpus_stats, dpo_rows, load_runs, render_stats, write_jsonl
from selfix_action.learn.reward_model import save, train
from selfix_action.learn.trace_schema import TraceError, read_trace
from selfix_action.learn.viewer import render_html


def _runs(paths: Sequence[str], err: TextIO) -> list:
    warnings: list[str] = []
    runs = load_runs(paths, warnings)
    for warning in warnings:
        print(f"selfix: warning: {warning}", file=err)
    if not runs:
        raise InputError("no readable trace among the given paths")
    return runs


def run_export_dpo(paths: Sequence[str], output: Path, threshold: float, out: TextIO, err: TextIO) -> int:
    runs = _runs(paths, err)
    rows = dpo_rows(runs, threshold)
    count = write_jsonl(rows, output)
    kinds: dict[str, int] = {}
    for row in rows:
        kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
    detail = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) or "none"
    print(f"selfix: {count} preference pair(s) ({detail}) from {len(runs)} run(s) -> {output}", file=out)
    return 0  # success


def run_export_stats(paths: Sequence[str], as_json: bool, out: TextIO, err: TextIO) -> int:
    stats = corpus_stats(_runs(paths, err))
    out.write(json.dumps(stats, indent=2) + "\n" if as_json else render_stats(stats))
    return 0  # success


def run_learn(paths: Sequence[str], output: Path, held_out: float, out: TextIO, err: TextIO) -> int:
    try:
        model = train(_runs(paths, err), held_out=held_out)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    save(model, output)
    m = model["metrics"]
    test = m["held_out"]
    print(
        f"selfix: reward model on {m['train']['n']} train / {test['n']} held-out hypotheses from {m['runs']} run(s); "
        f"held-out accuracy {test.get('accuracy', '-')}, log loss {test.get('log_loss', '-')}, "
        f"corr(prob, reward) {test.get('pearson_prob_reward', '-')} -> {output}",
        file=out,
    )
    return 0  # success


def run_view(path: str, output: Path | None, out: TextIO) -> int:
    try:
        trace = read_trace(path)
    except TraceError as exc:
        raise InputError(str(exc)) from exc
    target = output or Path(path).with_suffix(".html")
    target.write_text(render_html(trace), encoding="utf-8")
    print(f"selfix: wrote {target}", file=out)
    return 0  # success
