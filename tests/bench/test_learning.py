"""The learning evaluation end to end on the two tiny benchmark tasks: real localization, recorded candidates
with the fix labelled, replay under the engine's own order, the memory filled by project, the paired figures."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from selfix_action.offline.ordering import OrderModel
from selfix_bench import learning
from selfix_bench.tasks import load_task

TASKS = Path(__file__).resolve().parents[1] / "bench" / "fixtures" / "tasks"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("learning")
    return [
        learning.collect_one(load_task(TASKS / f"{name}.json"), out / f"{name}.json")
        for name in ("tiny-clamp-name", "tiny-count_above-compare")
    ]


@pytest.mark.slow
def test_collected_candidates_carry_features_and_exactly_one_fix(records: list[dict[str, Any]]) -> None:
    for record in records:
        candidates = [c for h in record["hypotheses"] for c in h["candidates"]]
        assert len(candidates) > 5 and sum(c["fix"] for c in candidates) == 1
        fix = next(c for c in candidates if c["fix"])
        assert fix["template"] == record["bug_template"]  # each mutation template is its own inverse
        assert all("log_weight" in c["features"] and f"tpl:{c['template']}" in c["features"] for c in candidates)
        assert record["signatures"] and record["suspects"]


def test_replay_finds_the_fix_where_the_engine_would_try_it(records: list[dict[str, Any]]) -> None:
    for record in records:
        result = learning.replay(record, None)
        assert result.to_fix is not None and result.run.healed and result.run.patch_template == record["bug_template"]
        assert result.run.candidates == result.to_fix
        assert learning.replay(record, None, budget=result.to_fix - 1).to_fix is None  # the budget counts


def test_a_repeated_failure_gets_its_fix_boosted_and_the_figures_are_paired(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    first = records[0]
    again = copy.deepcopy(first)
    again["id"] = first["id"] + "-again"
    off = [learning.replay(again, None)]
    grown = learning.run_with_memory([first], [again], None, tmp_path)
    assert off[0].to_fix is not None and grown[0].to_fix is not None
    assert grown[0].to_fix <= off[0].to_fix
    assert grown[0].run.boosted == {"H1": [first["bug_template"]]} and off[0].run.boosted == {}
    pair = learning.paired(off, grown)
    assert pair["tasks"] == 1 and pair["resolved_a"] == pair["resolved_b"] == 1
    assert pair["fewer"] + pair["more"] + pair["same"] == 1


def test_evaluate_splits_by_library_and_renders(records: list[dict[str, Any]], tmp_path: Path) -> None:
    two = copy.deepcopy(records)
    two[0]["library"], two[1]["library"] = "alpha", "beta"
    result = learning.evaluate(two, tmp_path, lambda message: None)
    assert [f["train"] for f in result["folds"]] == ["alpha", "beta"]
    assert result["order"]["tasks"] == 2 and result["memory"]["filled_vs_off"]["tasks"] == 2
    text = learning.render(result)
    assert "Learned order vs hand priors" in text and "sign test" in text
    OrderModel(learning.ranker.fit_order_model(two))  # the fitted model is a loadable order model
