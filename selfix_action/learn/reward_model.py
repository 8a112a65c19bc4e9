"""A reward-model baseline: logistic regression on engineered hypothesis features (pure Python, no numpy).

Each reached hypothesis of each run is one example; the label is whether a patch for it was verified. The
split is by run (a hash of the run id), so hypotheses of one run never sit on both sides. Reported on the
held-out part: accuracy, log loss, and the Pearson correlation of the predicted probability with the
hypothesis reward (``learn.reward``). The model is a small JSON file: feature names, standardization,
weights and the metrics.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfix_action.learn.reward import hypothesis_reward
from selfix_action.learn.runs import HypothesisOutcome, RunRecord

MODEL_VERSION = 1
FEATURES = (
    "inverse_rank",
    "confidence",
    "line_count",
    "suspect_position",
    "in_traceback_frame",
    "file_in_traceback",
    "has_qa_test",
    "model_engine",
)


def features(h: HypothesisOutcome, run: RunRecord) -> list[float]:
    """Features known *before* the hypothesis is tried (no outcome leaks in)."""
    where = f"{h.file}:{h.symbol}"
    position = run.suspects.index(where) if where in run.suspects else len(run.suspects)
    frames = {s.frame for s in run.signatures if s.frame}
    return [
        1.0 / max(1, h.rank),
        float(h.confidence),
        math.log1p(len(h.lines)),
        1.0 / (1 + position),
        float(where in frames or any(f.endswith("." + h.symbol) for f in frames)),
        float(any(f.split(":")[0] == h.file for f in frames)),
        float(h.qa_test is not None),
        float(run.engine not in ("", "offline")),
    ]


def examples(runs: Sequence[RunRecord]) -> list[tuple[str, list[float], int, float]]:
    """(run id, features, label, reward) for every hypothesis that has a reward."""
    out = []
    for run in runs:
        for h in run.hypotheses:
            reward = hypothesis_reward(h)
            if reward is not None:
                out.append((run.run_id, features(h, run), int(h.fixed), reward.total))
    return out


def is_held_out(run_id: str, fraction: float = 0.25) -> bool:
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < fraction


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def fit(
    xs: Sequence[Sequence[float]], ys: Sequence[int], *, l2: float = 0.01, epochs: int = 500, lr: float = 0.5
) -> tuple[list[float], float, list[float], list[float]]:
    """Batch gradient descent on standardized features; returns weights, bias, means, stds."""
    n, d = len(xs), len(FEATURES)
    means = [sum(x[j] for x in xs) / n for j in range(d)]
    stds = [math.sqrt(sum((x[j] - means[j]) ** 2 for x in xs) / n) or 1.0 for j in range(d)]
    zs = [[(x[j] - means[j]) / stds[j] for j in range(d)] for x in xs]
    w, b = [0.0] * d, 0.0
    for _ in range(epochs):
        gw, gb = [0.0] * d, 0.0
        for z, y in zip(zs, ys, strict=True):
            err = _sigmoid(sum(wj * zj for wj, zj in zip(w, z, strict=True)) + b) - y
            gb += err
            for j in range(d):
                gw[j] += err * z[j]
        w = [w[j] - lr * (gw[j] / n + l2 * w[j]) for j in range(d)]
        b -= lr * gb / n
    return w, b, means, stds


def predict(model: dict[str, Any], x: Sequence[float]) -> float:
    z = sum(w * (v - m) / s for w, v, m, s in zip(model["weights"], x, model["mean"], model["std"], strict=True))
    return _sigmoid(z + model["bias"])


def pearson(a: Sequence[float], b: Sequence[float]) -> float | None:
    if len(a) < 2:
        return None
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    va = math.sqrt(sum((x - ma) ** 2 for x in a))
    vb = math.sqrt(sum((y - mb) ** 2 for y in b))
    return round(cov / (va * vb), 4) if va and vb else None


def _metrics(model: dict[str, Any], data: Sequence[tuple[str, list[float], int, float]]) -> dict[str, Any]:
    if not data:
        return {"n": 0}
    probs = [predict(model, x) for _, x, _, _ in data]
    labels = [y for _, _, y, _ in data]
    rewards = [r for _, _, _, r in data]
    eps = 1e-9
    loss = -sum(y * math.log(p + eps) + (1 - y) * math.log(1 - p + eps) for p, y in zip(probs, labels, strict=True))
    return {
        "n": len(data),
        "positives": sum(labels),
        "accuracy": round(sum((p >= 0.5) == bool(y) for p, y in zip(probs, labels, strict=True)) / len(data), 4),
        "log_loss": round(loss / len(data), 4),
        "pearson_prob_reward": pearson(probs, rewards),
        "pearson_prob_label": pearson(probs, [float(y) for y in labels]),
    }


def evaluate(model: dict[str, Any], data: Sequence[tuple[str, list[float], int, float]]) -> dict[str, Any]:
    """Accuracy, log loss and correlations of ``model`` on ``data`` (from ``examples``)."""
    return _metrics(model, data)


def train(runs: Sequence[RunRecord], *, held_out: float = 0.25) -> dict[str, Any]:
    data = examples(runs)
    if not data:
        raise ValueError("no rewarded hypotheses in these traces: nothing to learn from")
    test = [e for e in data if is_held_out(e[0], held_out)]
    train_set = [e for e in data if not is_held_out(e[0], held_out)]
    if not train_set or not test:  # tiny corpora: fall back to a deterministic 75/25 split by run order
        run_ids = sorted({e[0] for e in data})
        cut = max(1, int(len(run_ids) * (1 - held_out))) if len(run_ids) > 1 else len(run_ids)
        keep = set(run_ids[:cut])
        train_set = [e for e in data if e[0] in keep]
        test = [e for e in data if e[0] not in keep]
    weights, bias, means, stds = fit([x for _, x, _, _ in train_set], [y for _, _, y, _ in train_set])
    model: dict[str, Any] = {
        "version": MODEL_VERSION,
        "kind": "logistic_regression",
        "features": list(FEATURES),
        "weights": [round(w, 6) for w in weights],
        "bias": round(bias, 6),
        "mean": [round(m, 6) for m in means],
        "std": [round(s, 6) for s in stds],
    }
    model["metrics"] = {
        "runs": len({e[0] for e in data}),
        "train": _metrics(model, train_set),
        "held_out": _metrics(model, test),
    }
    return model


def save(model: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(model, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def load(path: Path) -> dict[str, Any]:
    model = json.loads(path.read_text(encoding="utf-8"))
    if model.get("version") != MODEL_VERSION or model.get("features") != list(FEATURES):
        raise ValueError(f"{path}: model version/features do not match this selfix")
    return model
