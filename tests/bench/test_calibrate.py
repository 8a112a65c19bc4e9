"""Fitting which evidence caps a patch below high (selfix_bench/calibrate.py): on one set, then applied unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_bench.calibrate import TUNABLE, Patch, figures, fit, main, older_codes, patches


def record(task: str, correct: bool, *codes: tuple[str, str]) -> dict:
    reasons = [{"code": "confirmed", "level": "high"}, *({"code": c, "level": lv} for c, lv in codes)]
    return {"id": task, "resolved": True, "correct": correct, "patch": task, "confidence": {"reasons": reasons}}


CALIBRATION = [
    record("a", True),
    record("b", True, ("inputs_outside_changed", "high")),  # a correct fix changes an unchecked value too
    record("g", True, ("inputs_outside_changed", "high")),
    record("c", False, ("second_solution_differs", "medium")),
    record("d", False, ("review_partial", "medium"), ("inputs_outside_changed", "high")),
    record("e", True, ("review_partial", "medium")),  # the reviewer was wrong here
    record("f", False, ("review_partial", "medium"), ("second_solution_differs", "medium")),
]


def test_the_fit_keeps_wrong_patches_below_high_with_the_fewest_correct_ones_lost() -> None:
    found = patches(CALIBRATION, {})
    caps = fit(found)
    # review_partial catches d and f, second_solution_differs c; capping the outside change instead of the review
    # would catch d too, but lose b and g for e.
    assert caps == frozenset({"second_solution_differs", "review_partial"})
    result = figures(found, caps)
    assert (result.high, result.high_correct, result.high_wrong) == (3, 3, 0)
    assert figures(found, frozenset()).high_wrong == 3


def test_a_reviewed_verdict_counts_a_patch_correct() -> None:
    found = patches(
        [record("x", False)],
        {"x": {__import__("selfix_bench.report").report.patch_digest("x"): {"verdict": "correct"}}},
    )
    assert found == [Patch("x", True, (("confirmed", "high"),))]


def test_the_rule_fitted_on_one_run_is_reported_on_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit_run, other = tmp_path / "fit.jsonl", tmp_path / "other.jsonl"
    fit_run.write_text("\n".join(json.dumps(r) for r in CALIBRATION) + "\n")
    other.write_text(json.dumps(record("z", False, ("review_wrong", "medium"))) + "\n")
    assert main(["--fit", str(fit_run), "--evaluate", str(other)]) == 0
    out = capsys.readouterr().out
    assert "'review_partial'" in out and "'second_solution_differs'" in out
    # review_wrong never occurred in the fit: it keeps the product's level (medium), and the other run's wrong
    # patch is not high.
    assert "'review_wrong'" in out
    assert "| evaluate: other.jsonl | 1 | 0 | 0 | - |" in out
    assert "| `review_partial` | 1 | 2 |" in out  # e correct; d and f partial or wrong


def test_a_code_the_fitting_set_never_shows_keeps_the_products_level() -> None:
    found = patches(CALIBRATION, {})
    # second_solution_differs occurs in CALIBRATION: fitted. inputs_outside_failed does not: medium, as given.
    caps = fit(found, {"inputs_outside_failed": "medium", "review_wrong": "high"})
    assert "inputs_outside_failed" in caps and "review_wrong" not in caps
    assert {"second_solution_differs", "review_partial"} <= caps


def probed(task: str, correct: bool, coverage: str, calls_kept: bool) -> dict:
    """A record whose coverage signal says passing tests ran other lines; the probe says whether their calls to
    the edited functions all ended as before."""
    found = record(task, correct, ("p2p_behaviour_changed", coverage))
    text = "8 input(s) replayed: 1 changed outcome, " + (
        "none of them a passing test's call" if calls_kept else "2 of them a passing test's call"
    )
    found["confidence"]["reasons"].append({"code": "inputs_probed", "level": "high", "text": text})
    return found


def test_older_codes_are_fitted_only_with_enough_patches_and_the_coverage_signal_is_split_by_the_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = [
        *(probed(f"kept-{n}", True, "low", calls_kept=True) for n in range(5)),  # the probe explains the change
        *(probed(f"moved-{n}", False, "low", calls_kept=False) for n in range(3)),  # it does not
        record("rare", True, ("pattern:clone_unchanged", "medium")),  # one patch: no evidence to lift it
        record("plain", True),
    ]
    found = patches(run, {})
    assert {code for p in found for code, _ in p.reasons} >= {"p2p_behaviour_changed/calls_kept"}
    older = older_codes(found)
    assert older == ("p2p_behaviour_changed", "p2p_behaviour_changed/calls_kept", "pattern:clone_unchanged")
    caps = fit(found, {}, (*TUNABLE, *older), min_support=5)
    assert "p2p_behaviour_changed/calls_kept" not in caps  # 5 correct, 0 wrong: lifted
    assert {"p2p_behaviour_changed", "pattern:clone_unchanged"} <= caps  # 3 wrong; too rare to judge
    result = figures(found, caps, (*TUNABLE, *older))
    assert (result.high, result.high_wrong) == (6, 0)
    # A capped older code keeps the level it was recorded with (low here), not medium.
    assert found[5].level(caps, (*TUNABLE, *older)) == "low"
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in run) + "\n")
    assert main(["--fit", str(path), "--older"]) == 0
    out = capsys.readouterr().out
    assert "lifted: ['p2p_behaviour_changed/calls_kept']" in out
    assert "| `p2p_behaviour_changed/calls_kept` | 5 | 0 |" in out


def test_a_code_seen_on_fewer_than_five_patches_keeps_the_products_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One correct patch the reviewer called wrong: lifting review_wrong would gain it, but one patch is no evidence.
    run = [record("a", True, ("review_wrong", "medium")), *(record(f"p{n}", True) for n in range(4))]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in run) + "\n")
    assert main(["--fit", str(path)]) == 0
    assert "'review_wrong'" in capsys.readouterr().out.splitlines()[0]  # still caps, as the product has it
    five = [record(f"w{n}", True, ("review_wrong", "medium")) for n in range(5)]
    path.write_text("\n".join(json.dumps(r) for r in five) + "\n")
    assert main(["--fit", str(path)]) == 0
    assert "'review_wrong'" not in capsys.readouterr().out.splitlines()[0]  # five correct ones: lifted
