from __future__ import annotations

import json
from pathlib import Path

from selfix_action.learn.dpo import load_runs
from selfix_action.learn.reward_model import FEATURES, examples, fit, load, pearson, predict, save, train
from tests.helpers.learning import TRACES


def test_fit_learns_a_separable_signal() -> None:
    xs = [[float(i % 2), 0.5, 0, 0, 0, 0, 0, 0] for i in range(40)]
    ys = [i % 2 for i in range(40)]
    w, b, mean, std = fit(xs, ys)
    model = {"weights": w, "bias": b, "mean": mean, "std": std}
    assert predict(model, xs[1]) > 0.9 and predict(model, xs[0]) < 0.1


def test_pearson() -> None:
    assert pearson([1, 2, 3], [2, 4, 6]) == 1.0
    assert pearson([1, 2, 3], [3, 2, 1]) == -1.0
    assert pearson([1], [1]) is None


def test_train_on_example_traces_and_save(tmp_path: Path) -> None:
    runs = load_runs([TRACES], [])
    data = examples(runs)
    assert len(data) >= 10 and all(len(x) == len(FEATURES) for _, x, _, _ in data)
    model = train(runs)
    held, trained = model["metrics"]["held_out"], model["metrics"]["train"]
    assert held["n"] >= 1 and trained["n"] >= 1 and held["n"] + trained["n"] == len(data)
    path = tmp_path / "reward_model.json"
    save(model, path)
    assert path.stat().st_size < 4000 and load(path)["features"] == list(FEATURES)
    assert json.loads(path.read_text())["kind"] == "logistic_regression"
