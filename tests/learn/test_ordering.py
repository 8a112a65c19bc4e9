"""The learned candidate order: features, the model file, fallbacks, and where boosts may reorder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.learn import ranker
from selfix_action.offline import ordering
from selfix_action.offline.engine import OfflineEngine
from selfix_action.offline.ordering import MODEL_PATH, OrderModel, load_order_model
from selfix_action.repair.values import Evidence, SuspiciousLine, TestResult, TestStatus

SOURCE = (
    "def average(values):\n"
    "    if not values:\n"
    "        return 0.0\n"
    "    total = sum(values)\n"
    "    return total // len(values)\n"
)


class _Files:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_file(self, path: str) -> str:
        return self.files[path]


def _evidence(lines: dict[int, float], message: str = "assert 1 == 1.5") -> Evidence:
    failure = TestResult(
        nodeid="tests/test_m.py::test_average",
        status=TestStatus.FAILED,
        exc_type="AssertionError",
        message=message,
    )
    return Evidence(
        f2p_tests=(failure.nodeid,),
        p2p_tests=(),
        failures=(failure,),
        suspicious_lines=tuple(
            SuspiciousLine(file="m.py", line=line, score=score, function="average") for line, score in lines.items()
        ),
        suspicious_functions=(),
        coverage_used=True,
    )


def _ranked(engine: OfflineEngine, evidence: Evidence) -> list[ordering.RankedCandidate]:
    sandbox = _Files({"m.py": SOURCE})
    [hypothesis] = engine.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
    return engine.ranked(hypothesis, evidence, sandbox)  # type: ignore[arg-type]


def test_features_name_the_node_the_operator_and_what_the_message_mentions() -> None:
    items = _ranked(OfflineEngine(order_model=None), _evidence({5: 1.0, 4: 0.5}, "assert 1 == 1.5 (values, sum)"))
    by_description = {i.edit.description: i.features for i in items}
    floor_div = by_description["line 5: replace `total // len(values)` with `total / len(values)`"]
    assert floor_div["tpl:binop_replace"] == 1.0 and floor_div["kind:BinOp"] == 1.0
    assert floor_div["op://>/"] == 1.0 and floor_div["exc:AssertionError"] == 1.0
    assert floor_div["suspiciousness"] == 1.0 and floor_div["distance"] == 0.0
    renamed = [f for d, f in by_description.items() if "`len` with `sum`" in d]
    assert renamed and renamed[0]["introduces_name_in_message"] == 1.0 and renamed[0]["kind:Name"] == 1.0
    other = next(i.features for i in items if i.line == 4)
    assert other["suspiciousness"] == 0.5 and other["distance"] > 0 and other["line_order"] > 0
    assert all(set(i.features) >= {"log_weight", "log_prior", "log_fan_out"} for i in items)


def test_a_model_of_another_version_or_no_file_falls_back_to_the_priors(tmp_path: Path) -> None:
    assert load_order_model(tmp_path / "absent.json") is None
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"version": 99, "kind": ordering.ORDER_MODEL_KIND, "weights": {}}))
    assert load_order_model(bad) is None
    bad.write_text("{not json")
    assert load_order_model(bad) is None
    assert ranker.ORDER_MODEL_VERSION == ordering.ORDER_MODEL_VERSION
    assert ranker.ORDER_MODEL_KIND == ordering.ORDER_MODEL_KIND


def test_an_unseen_template_scores_by_its_prior_features_alone() -> None:
    model = OrderModel(
        {
            "version": ordering.ORDER_MODEL_VERSION,
            "kind": ordering.ORDER_MODEL_KIND,
            "weights": {"tpl:binop_replace": 2.0, "log_weight": 1.0},
            "mean": {"log_weight": -2.0},
            "std": {"log_weight": 1.0},
        }
    )
    known = {"tpl:binop_replace": 1.0, "log_weight": -1.0}
    unseen = {"tpl:brand_new_family": 1.0, "log_weight": -1.0}
    assert model.score(known) == pytest.approx(3.0)
    assert model.score(unseen) == pytest.approx(1.0)  # only the prior-based term
    assert model.score({"tpl:brand_new_family": 1.0, "log_weight": -3.0}) < model.score(unseen)


def test_the_ranker_learns_which_template_fixes_and_the_engine_follows_it(tmp_path: Path) -> None:
    fix = {"tpl:binop_replace": 1.0, "log_weight": -2.0, "line_order": 0.0}
    rival = {"tpl:name_replace": 1.0, "log_weight": -2.0, "line_order": 1.0}
    model_data = ranker.fit([(fix, [rival, rival])] * 4, epochs=200)
    model = OrderModel(model_data)
    assert model.score(fix) > model.score(rival)
    # shipped through its JSON file, the engine puts binop_replace first on the line despite its lower prior
    path = tmp_path / "order.json"
    ranker.save(model_data, path)
    engine = OfflineEngine(order_model=load_order_model(path))
    sandbox = _Files({"m.py": SOURCE})
    evidence = _evidence({5: 1.0})
    [hypothesis] = engine.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
    first = next(engine.candidates(hypothesis, evidence, sandbox, []))  # type: ignore[arg-type]
    assert first.template == "binop_replace"
    priors_first = next(OfflineEngine(order_model=None).candidates(hypothesis, evidence, sandbox, []))  # type: ignore[arg-type]
    assert priors_first.template != "binop_replace"


def test_a_boost_never_goes_ahead_of_a_better_localized_line() -> None:
    boosts = {"return_replace": 0.9}
    engine = OfflineEngine(template_scores=lambda evidence, hypothesis: boosts, order_model=None)
    evidence = _evidence({4: 1.0, 3: 0.5})
    items = ordering.ordered(_ranked(engine, evidence), boosts, None)
    lines = [i.line for i in items]  # the suspicious line each candidate was generated for
    assert lines == sorted(lines, key=lambda line: {4: 0, 3: 1}[line])  # line 4 (more suspicious) entirely first
    line_three = [i.edit.template for i in items if i.line == 3]
    assert line_three[0] == "return_replace"  # boosted within its line
    unboosted = [i.edit.template for i in ordering.ordered(items, {}, None) if i.line == 3]
    assert unboosted[0] != "return_replace"
    # the engine yields exactly this order, then the pairs of edits at the two top lines (offline.templates.pairs)
    sandbox = _Files({"m.py": SOURCE})
    fresh = OfflineEngine(template_scores=lambda evidence, hypothesis: boosts, order_model=None)
    [hypothesis] = fresh.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
    found = list(fresh.candidates(hypothesis, evidence, sandbox, []))  # type: ignore[arg-type]
    assert [c.description for c in found[: len(items)]] == [i.edit.description for i in items]
    assert {c.template for c in found[len(items) :]} <= {"edit_pair"}


def test_the_shipped_model_loads_and_names_what_it_was_fitted_on() -> None:
    if not MODEL_PATH.exists():
        pytest.skip("no candidate_order.json shipped: the engine uses the hand priors")
    model = load_order_model(MODEL_PATH)
    assert model is not None and model.templates
    assert model.data["trained_on"]["tasks"] > 0
