"""The candidate order's model: a pairwise logistic ranker over sparse named candidate features (pure Python).

Examples come from the benchmark's recorded candidates (``selfix_bench.learning``): per task, the fix
against each rival the score actually orders it against (same hypothesis, lines as suspicious as the fix's
line; suspiciousness itself comes first in the engine's order). Every task weighs the same, so a task with 900
rivals does not drown one with 40 (at most ``MAX_NEGATIVES`` rivals each, a deterministic sample). Numeric
features are scaled by their standard deviation; one-hot features (``tpl:...``, ``kind:...``) are not. A
one-hot seen in fewer than ``MIN_SUPPORT`` tasks is dropped (it would only memorize a task).

The result is a small JSON file that ``offline.ordering.OrderModel`` reads; its ``version`` and ``kind`` must
match there, else the engine falls back to the hand priors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ORDER_MODEL_VERSION = 1  # must equal offline.ordering.ORDER_MODEL_VERSION (tested)
ORDER_MODEL_KIND = "candidate_order_logistic"
MIN_SUPPORT = 3
MAX_NEGATIVES = 80  # per task, a deterministic sample (reweighted): the pure-Python fit stays seconds
L2 = 0.01
EPOCHS = 300
LEARNING_RATE = 0.5


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def is_numeric(name: str) -> bool:
    return ":" not in name


def fit(
    groups: Sequence[tuple[Mapping[str, float], Sequence[Mapping[str, float]]]],
    *,
    l2: float = L2,
    epochs: int = EPOCHS,
    lr: float = LEARNING_RATE,
    min_support: int = MIN_SUPPORT,
) -> dict[str, Any]:
    """Fit a pairwise logistic ranker: per task (the fix's features, its rivals' features), the probability
    that the fix scores above a rival is sigmoid(w . (x_fix - x_rival)). Every task weighs the same."""
    support: dict[str, int] = {}
    for fix, rivals in groups:
        for name in {n for feats in (fix, *rivals) for n in feats}:
            support[name] = support.get(name, 0) + 1
    names = sorted(n for n, k in support.items() if is_numeric(n) or k >= min_support)
    column = {n: j for j, n in enumerate(names)}
    d = len(names)
    numeric = [j for j, n in enumerate(names) if is_numeric(n)]
    # Standardize numeric features over every candidate seen (the scale the score is computed on).
    sums, squares, count = [0.0] * d, [0.0] * d, 0
    for fix, rivals in groups:
        for feats in (fix, *rivals):
            count += 1
            for n, v in feats.items():
                if n in column and is_numeric(n):
                    sums[column[n]] += v
                    squares[column[n]] += v * v
    mean, std = [0.0] * d, [1.0] * d
    for j in numeric:
        mean[j] = sums[j] / max(1, count)
        std[j] = math.sqrt(max(0.0, squares[j] / max(1, count) - mean[j] ** 2)) or 1.0
    pairs: list[tuple[list[tuple[int, float]], int, float]] = []
    flip = 0
    for fix, all_rivals in groups:
        step = max(1, math.ceil(len(all_rivals) / MAX_NEGATIVES))
        rivals = list(all_rivals)[::step]
        for rival in rivals:
            diff: dict[int, float] = {}
            for n, v in fix.items():
                if n in column:
                    diff[column[n]] = diff.get(column[n], 0.0) + v / std[column[n]]
            for n, v in rival.items():
                if n in column:
                    diff[column[n]] = diff.get(column[n], 0.0) - v / std[column[n]]
            flip ^= 1  # half the pairs mirrored, so the label is not constant
            x = [(k, v if flip else -v) for k, v in diff.items() if v]
            pairs.append((x, flip, 1.0 / len(rivals)))
    total = sum(w for _, _, w in pairs) or 1.0
    zs = [(x, y, w / total) for x, y, w in pairs]
    weights = [0.0] * d
    for _ in range(epochs):
        grad = [0.0] * d
        for x, y, w in zs:
            err = (_sigmoid(sum(weights[k] * v for k, v in x)) - y) * w
            for k, v in x:
                grad[k] += err * v
        weights = [weights[j] - lr * (grad[j] + l2 * weights[j]) for j in range(d)]
    return {
        "version": ORDER_MODEL_VERSION,
        "kind": ORDER_MODEL_KIND,
        "bias": 0.0,
        "weights": {n: round(weights[j], 6) for j, n in enumerate(names) if abs(weights[j]) > 1e-6},
        "mean": {names[j]: round(mean[j], 6) for j in numeric},
        "std": {names[j]: round(std[j], 6) for j in numeric},
    }


def task_groups(records: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, float], list[Mapping[str, float]]]]:
    """Per task whose fix was generated: the fix and its rivals, the candidates of the same hypothesis at lines
    as suspicious as the fix's (the only ones the score orders against it: suspiciousness comes first)."""
    groups = []
    for record in records:
        for hypothesis in record["hypotheses"]:
            fixes = [c for c in hypothesis["candidates"] if c["fix"]]
            if not fixes:
                continue
            fix = fixes[0]
            rivals = [
                c["features"]
                for c in hypothesis["candidates"]
                if not c["fix"] and c["suspiciousness"] == fix["suspiciousness"]
            ]
            if rivals:
                groups.append((fix["features"], rivals))
            break
    return groups


def fit_order_model(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The order model fitted on benchmark task records, with what it was fitted on."""
    groups = task_groups(records)
    model = fit(groups)
    model["templates"] = sorted({n.split(":", 1)[1] for n in model["weights"] if n.startswith("tpl:")})
    model["trained_on"] = {
        "tasks": len(groups),
        "libraries": sorted({str(r.get("library", "")) for r in records}),
        "pairs": sum(min(len(r), MAX_NEGATIVES) for _, r in groups),
    }
    return model


def save(model: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(model, indent=1, sort_keys=True) + "\n", encoding="utf-8")
