"""The candidate order's model: a logistic regression over sparse named candidate features (pure Python).

Examples come from the benchmark's replayed candidates (``selfix_action.bench.learning``): one per generated
candidate of a task, labelled 1 if it is the fix. Every task weighs the same (its positives share half its
weight, its negatives the other half), so a task with 900 candidates does not drown one with 40. Numeric
features are standardized; one-hot features (``tpl:...``, ``kind:...``) are not. A one-hot seen in fewer than
``MIN_SUPPORT`` tasks is dropped (it would only memorize a task).

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
    groups: Sequence[Sequence[tuple[Mapping[str, float], int]]],
    *,
    l2: float = L2,
    epochs: int = EPOCHS,
    lr: float = LEARNING_RATE,
    min_support: int = MIN_SUPPORT,
) -> dict[str, Any]:
    """Fit on ``groups`` (one per task: (features, label) per candidate); returns the model's fields."""
    support: dict[str, int] = {}
    for group in groups:
        for name in {n for feats, _ in group for n in feats}:
            support[name] = support.get(name, 0) + 1
    names = sorted(n for n, k in support.items() if is_numeric(n) or k >= min_support)
    column = {n: j for j, n in enumerate(names)}
    rows: list[tuple[list[tuple[int, float]], int, float]] = []
    for full in groups:
        positives = sum(1 for _, y in full if y)
        negatives = len(full) - positives
        step = max(1, math.ceil(negatives / MAX_NEGATIVES))
        neg_index = 0
        group = []
        for feats, y in full:
            if not y:
                neg_index += 1
                if (neg_index - 1) % step:
                    continue
            group.append((feats, y))
        negatives = len(group) - positives
        for feats, y in group:
            weight = 0.5 / positives if y else 0.5 / max(1, negatives)
            if not positives:
                weight = 1.0 / max(1, negatives)
            rows.append(([(column[n], v) for n, v in feats.items() if n in column], int(y), weight))
    total = sum(w for _, _, w in rows) or 1.0
    d = len(names)
    mean, std = [0.0] * d, [1.0] * d
    numeric = [j for j, n in enumerate(names) if is_numeric(n)]
    for j in numeric:
        mean[j] = sum(w * v for x, _, w in rows for k, v in x if k == j) / total
        var = sum(w * (v - mean[j]) ** 2 for x, _, w in rows for k, v in x if k == j) / total
        std[j] = math.sqrt(var) or 1.0
    zs = [([(k, (v - mean[k]) / std[k]) for k, v in x], y, w / total) for x, y, w in rows]
    weights, bias = [0.0] * d, 0.0
    for _ in range(epochs):
        grad, grad_bias = [0.0] * d, 0.0
        for x, y, w in zs:
            err = (_sigmoid(sum(weights[k] * v for k, v in x) + bias) - y) * w
            grad_bias += err
            for k, v in x:
                grad[k] += err * v
        weights = [weights[j] - lr * (grad[j] + l2 * weights[j]) for j in range(d)]
        bias -= lr * grad_bias
    return {
        "version": ORDER_MODEL_VERSION,
        "kind": ORDER_MODEL_KIND,
        "bias": round(bias, 6),
        "weights": {n: round(weights[j], 6) for j, n in enumerate(names) if abs(weights[j]) > 1e-6},
        "mean": {names[j]: round(mean[j], 6) for j in numeric},
        "std": {names[j]: round(std[j], 6) for j in numeric},
    }


def task_groups(records: Sequence[Mapping[str, Any]]) -> list[list[tuple[Mapping[str, float], int]]]:
    """One group per benchmark task record: every generated candidate with its label."""
    return [
        [(c["features"], int(c["fix"])) for h in r["hypotheses"] for c in h["candidates"]]
        for r in records
        if any(h["candidates"] for h in r["hypotheses"])
    ]


def fit_order_model(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The order model fitted on benchmark task records, with what it was fitted on."""
    groups = task_groups(records)
    model = fit(groups)
    model["templates"] = sorted({n.split(":", 1)[1] for n in model["weights"] if n.startswith("tpl:")})
    model["trained_on"] = {
        "tasks": len(groups),
        "libraries": sorted({str(r.get("library", "")) for r in records}),
        "candidates": sum(len(g) for g in groups),
    }
    return model


def save(model: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(model, indent=1, sort_keys=True) + "\n", encoding="utf-8")
