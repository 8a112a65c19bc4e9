"""The healing loop over a scripted engine and the real sandbox running real pytest on small projects."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from selfix_action.offline.engine import OfflineEngine
from selfix_action.repair.loop import HealingLoop, LoopConfig
from selfix_action.repair.protocols import EngineStopped, Sandbox
from selfix_action.repair.report import StopReason, render_markdown
from selfix_action.repair.values import (
    CandidatePatch,
    Evidence,
    Hypothesis,
    PlanChange,
    QATest,
    Verification,
    VerifyStage,
)
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import CALC, EXAMPLES, FIXED
from tests.helpers.scripted_engine import ScriptedEngine, hyp


@pytest.mark.slow
def test_heals_with_feedback_after_rejected_candidates(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(CALC)
    breaks_double = FIXED.replace("x * 2", "x * 3")
    engine = ScriptedEngine(
        [hyp("H1", 1)],
        {},
        {
            "H1": [
                {"tests/test_calc.py": "def test_add():\n    pass\n"},  # editing a test is refused
                {"calc.py": FIXED.replace("a + b", "a * b")},  # still fails F2P
                {"calc.py": breaks_double},  # fixes F2P, breaks a P2P test
                {"calc.py": FIXED},
            ]
        },
    )
    result = HealingLoop(sandbox, engine).run()
    report = result.report
    assert report.stop_reason is StopReason.HEALED
    assert report.exit_code == 0
    assert report.f2p_tests == ("tests/test_calc.py::test_add",)
    assert report.p2p_tests == ("tests/test_calc.py::test_add_zero", "tests/test_calc.py::test_double")
    assert result.files == {"calc.py": FIXED}
    assert report.patch is not None and "-    return a - b\n+    return a + b\n" in report.patch.diff
    stages = [v.stage for v in engine.feedback]
    assert stages == [VerifyStage.PROTECTED, VerifyStage.F2P, VerifyStage.P2P]
    assert "test_double" in engine.feedback[-1].detail
    assert report.tests_after == {t: "passed" for t in report.tests_before}
    assert report.hypotheses[0].rejections_by_stage == {
        "protected_path": 1,
        "fail_to_pass": 1,
        "pass_to_pass": 1,
    }
    # The user's copy is untouched: only the scratch copy was ever patched.
    assert "a - b" in (sandbox.repo / "calc.py").read_text()
    assert "a - b" in sandbox.read_file("calc.py")
    assert "healed" in render_markdown(report)


@pytest.mark.slow
def test_qa_test_that_passes_drops_the_hypothesis_a_broken_one_is_reasked_then_the_failing_tests_serve(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(CALC)
    passing_qa = QATest(
        path="test_qa_h1.py", source="from calc import double\n\ndef test_it():\n    assert double(2) == 4\n"
    )
    broken_qa = QATest(path="test_qa_h2.py", source="import no_such_module\n\ndef test_it():\n    pass\n")
    engine = ScriptedEngine(
        [hyp("H1", 1), hyp("H2", 2)],
        {"H1": passing_qa, "H2": broken_qa},
        {"H1": [{"calc.py": FIXED}], "H2": [{"calc.py": FIXED}]},
    )
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    h1, h2 = report.hypotheses
    assert not h1.exposed and "passes on the unpatched code" in h1.exposure and h1.candidates_tried == 0
    # A broken QA test is no evidence against its hypothesis: asked again once with the reason, still broken,
    # the failing tests serve as the reproduction and the Patcher gets its try.
    assert [h for h, _ in engine.qa_feedback] == ["H2"]
    assert "wrong reason (error CollectionError" in engine.qa_feedback[0][1]
    assert "No module named 'no_such_module'" in engine.qa_feedback[0][1]
    assert h2.exposed and "stayed broken" in h2.exposure and h2.outcome.startswith("healed")
    assert report.patch is not None and report.patch.hypothesis_id == "H2"


@pytest.mark.slow
def test_a_qa_test_only_passing_candidates_fail_is_disputed_once(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """ESLint-1's kind: the QA test asserts what the fix does not make true, so every candidate that passes the
    failing tests fails it alone. After two such candidates QA is shown its test, one candidate and the failure,
    once; a rewritten test that still exposes the bug walks the hypothesis again. A test kept as it was changes
    nothing."""
    wrong = "from calc import add\n\ndef test_it():\n    assert add(1, 2) == 3\n    assert add(2, 2) == 5\n"
    right = wrong.replace("== 5", "== 4")
    swapped = FIXED.replace("a + b", "b + a")
    candidates = {"H1": [{"calc.py": FIXED}, {"calc.py": swapped}]}
    qa = {"H1": QATest(path="test_qa_h1.py", source=wrong)}
    engine = ScriptedEngine(
        [hyp("H1", 1)], qa, candidates, qa_after_dispute={"H1": QATest(path="test_qa_h1.py", source=right)}
    )
    report = HealingLoop(make_sandbox(CALC), engine).run().report
    assert report.stop_reason is StopReason.HEALED
    assert [h for h, _ in engine.qa_disputes] == ["H1"]
    shown = engine.qa_disputes[0][1]
    assert "assert add(2, 2) == 5" in shown and "+    return a + b" in shown and "assert 4 == 5" in shown
    first, again = report.hypotheses
    assert first.rejections_by_stage == {"qa_test": 2} and again.outcome.startswith("healed")
    assert report.patch is not None and again.candidates_tried == 1
    # QA keeps its test: the dispute changes nothing, and it is not asked twice
    engine = ScriptedEngine([hyp("H1", 1)], qa, candidates, qa_after_dispute=qa)
    report = HealingLoop(make_sandbox(CALC), engine).run().report
    assert report.stop_reason is StopReason.HYPOTHESES_EXHAUSTED and len(engine.qa_disputes) == 1
    assert len(report.hypotheses) == 1


@pytest.mark.slow
def test_a_name_error_raised_in_project_code_exposes_the_hypothesis(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    """The exception's place decides, not its type: NameError in the project's own frames is the bug."""
    buggy = "def add(a, b):\n    return a + bb\n\n\ndef double(x):\n    return x * 2\n"
    sandbox = make_sandbox({**CALC, "calc.py": buggy})
    qa = QATest(path="test_qa_h1.py", source="from calc import add\n\ndef test_it():\n    assert add(1, 2) == 3\n")
    engine = ScriptedEngine([hyp("H1", 1)], {"H1": qa}, {"H1": [{"calc.py": FIXED}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    (h1,) = report.hypotheses
    assert h1.exposed and "NameError raised in calc.py" in h1.exposure
    assert engine.qa_feedback == []
    # The same NameError raised in the QA module's own line is a broken test, re-asked with where it was raised.
    sandbox = make_sandbox({**CALC, "calc.py": buggy})
    broken = QATest(path="test_qa_h1.py", source="def test_it():\n    assert add(1, 2) == 3\n")
    engine = ScriptedEngine([hyp("H1", 1)], {"H1": broken}, {"H1": [{"calc.py": FIXED}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    assert "_selfix_qa/test_qa_h1.py:2" in engine.qa_feedback[0][1] and "stayed broken" in report.hypotheses[0].exposure


@pytest.mark.slow
def test_minimizes_away_hunks_that_are_not_needed(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(CALC)
    noisy = FIXED.replace("return x * 2", "return x + x")  # equivalent, so a removable hunk
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": noisy}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.patch is not None
    assert report.patch.minimized_from_hunks == 2
    assert report.patch.hunks == 1
    assert "x + x" not in report.patch.diff


@pytest.mark.slow
def test_candidate_that_hangs_costs_only_the_timeout(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(CALC, wall_seconds=3)
    hangs = FIXED.replace("    return a + b", "    while True:\n        pass")
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": hangs}, {"calc.py": FIXED}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    rejected = report.hypotheses[0].rejections[0]
    assert (rejected.stage is VerifyStage.F2P and "timed out" in rejected.detail) or "Timeout" in rejected.detail


@pytest.mark.slow
def test_stops_on_candidate_budget(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(CALC)
    wrong = {"calc.py": FIXED.replace("a + b", "a * b")}
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [wrong, {"calc.py": FIXED}]})
    report = HealingLoop(sandbox, engine, LoopConfig(max_candidates=1)).run().report
    assert report.stop_reason is StopReason.CANDIDATE_BUDGET
    assert report.exit_code == 1
    assert report.patch is None


def test_no_failing_tests_is_nothing_to_heal(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox({**CALC, "calc.py": FIXED})
    report = HealingLoop(sandbox, ScriptedEngine([], {}, {})).run().report
    assert report.stop_reason is StopReason.NO_FAILING_TESTS
    assert report.exit_code == 3


@pytest.mark.slow
def test_flaky_failure_is_not_reproducible(make_sandbox: Callable[..., PytestSandbox]) -> None:
    flaky = {
        "tests/test_flaky.py": """
            from pathlib import Path

            MARK = Path(__file__).with_name("ran_once")


            def test_first_run_fails():
                first = not MARK.exists()
                MARK.write_text("x")
                assert not first
            """,
        "mod.py": "X = 1\n",
    }
    sandbox = make_sandbox(flaky)
    report = HealingLoop(sandbox, ScriptedEngine([], {}, {})).run().report
    assert report.stop_reason is StopReason.NOT_REPRODUCIBLE
    assert report.flaky_tests == ("tests/test_flaky.py::test_first_run_fails",)
    assert report.exit_code == 3


class StoppingEngine(ScriptedEngine):
    def candidates(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, history: Sequence[Verification]
    ) -> Iterator[CandidatePatch]:
        yield from super().candidates(hypothesis, evidence, sandbox, history)
        raise EngineStopped(StopReason.BUDGET_EXHAUSTED, "spent $0.50 of $0.50")


@pytest.mark.slow
def test_engine_budget_stop_is_a_named_stop_reason(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(CALC)
    engine = StoppingEngine([hyp("H1", 1), hyp("H2", 2)], {}, {"H1": [{"calc.py": FIXED.replace("a + b", "a * b")}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert report.exit_code == 1
    assert "spent $0.50 of $0.50" in report.notes
    assert report.usage == engine.usage()  # whatever the engine reports is carried into the report
    assert len(report.hypotheses) == 1  # H2 was never reached


@pytest.mark.slow
def test_a_patch_that_creates_a_source_file_is_verified_and_diffed(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(CALC)
    uses_helper = "from ops import plus\n\n\n" + FIXED.replace("a + b", "plus(a, b)")
    engine = ScriptedEngine(
        [hyp("H1", 1)], {}, {"H1": [{"calc.py": uses_helper, "ops.py": "def plus(a, b):\n    return a + b\n"}]}
    )
    result = HealingLoop(sandbox, engine).run()
    assert result.report.stop_reason is StopReason.HEALED
    assert result.originals.keys() == {"calc.py"}
    assert result.report.patch is not None
    assert "new file mode 100644\n--- /dev/null\n+++ b/ops.py" in result.report.patch.diff
    assert not (sandbox.root / "ops.py").exists()  # the scratch copy is restored


@pytest.mark.slow
def test_independent_candidates_are_verified_side_by_side_with_the_same_outcome(tmp_path: Path) -> None:
    outcomes = {}
    for jobs in (1, 2):
        with PytestSandbox(
            EXAMPLES / "range_sum",
            [sys.executable, "-m", "pytest"],
            limits=Limits(wall_seconds=60),
            scratch_parent=tmp_path,
            parallel_checks=jobs,
        ) as sandbox:
            result = HealingLoop(sandbox, OfflineEngine(), LoopConfig()).run()
            outcomes[jobs] = (result.report, sandbox.hot_runs)
    one, two = outcomes[1][0], outcomes[2][0]
    assert one.stop_reason is two.stop_reason is StopReason.HEALED
    assert one.patch is not None and two.patch is not None and one.patch.diff == two.patch.diff
    # The winner is the same candidate, and counts are the same; its batch partner, if any, is only a note.
    assert one.candidates_tried == two.candidates_tried and one.test_runs <= two.test_runs
    assert not any("side by side" in note for note in one.notes)
    assert outcomes[2][1] > 0  # the side-by-side checks ran in the hot worker


@pytest.mark.slow
def test_feedback_driven_candidates_are_never_verified_ahead(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(CALC)
    sandbox.parallel_checks = 4
    wrong = {"calc.py": FIXED.replace("a + b", "a * b")}
    engine = ScriptedEngine([hyp("H1", 1)], {"H1": None}, {"H1": [wrong, {"calc.py": FIXED}]})
    result = HealingLoop(sandbox, engine, LoopConfig()).run()
    assert result.report.stop_reason is StopReason.HEALED
    # The second candidate was asked for after the first one's verdict, and carried it.
    assert [v.candidate_id for v in engine.feedback] == ["H1-1"]


TOTALS = {
    "totals.py": "def label(x):\n    return 'value ' + str(x)\n\n\n"
    "def total(items):\n    return sum(items) - (1 if len(items) > 1 else 0)\n",
    "tests/test_totals.py": "from totals import label, total\n\n\n"
    "def test_total():\n    t = total([1, 2])\n    assert t == 3, label(t)\n\n\n"
    "def test_total_single():\n    assert total([5]) == 5\n",
}
TOTALS_FIXED = "def label(x):\n    return 'value ' + str(x)\n\n\ndef total(items):\n    return sum(items)\n"


@pytest.mark.slow
@pytest.mark.parametrize("with_qa", [True, False])
def test_a_patch_its_hypothesis_and_qa_test_agree_on_is_high_though_localization_ranked_another_function(
    make_sandbox: Callable[..., PytestSandbox], with_qa: bool
) -> None:
    """Coverage ranks ``label`` first (only the failing assertion's message runs it); the patch edits ``total``,
    where the hypothesis pointed and its own reproduction test failed: that agreement outweighs the ranking."""
    sandbox = make_sandbox(TOTALS)
    hypothesis = Hypothesis(
        id="H1", rank=1, title="total subtracts one", confidence=0.9, file="totals.py", symbol="total", lines=(6,)
    )
    qa = QATest(
        path="test_qa_h1.py", source="from totals import total\n\ndef test_it():\n    assert total([2, 2]) == 4\n"
    )
    engine = ScriptedEngine([hypothesis], {"H1": qa if with_qa else None}, {"H1": [{"totals.py": TOTALS_FIXED}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED and report.confidence is not None
    assert report.suspicious_functions[0].name == "label"
    codes = {r.code: r.level for r in report.confidence.reasons}
    if with_qa:
        assert report.confidence.level == "high", report.confidence.reasons
        assert codes["not_localized_agreed"] == "high" and "hypothesis_agrees" in codes
    else:
        assert report.confidence.level == "medium" and codes["not_localized"] == "medium"


LEAP = {
    "algo.py": 'def is_leap(year):\n    """Gregorian leap year rule."""\n'
    "    return year % 4 == 0 and (year % 100 == 0 or year % 400 == 0)\n",
    "tests/test_algo.py": "from algo import is_leap\n\n\n"
    "def test_common_year():\n    assert is_leap(2023) is False\n\n\n"
    "def test_leap_year():\n    assert is_leap(2024) is True\n",
}


@pytest.mark.slow
def test_a_patch_only_two_of_the_projects_tests_run_is_never_high(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """A held-out small bug: one failing and one passing test cannot tell the fix (``!= 0``) from the edit the
    offline engine makes (``and`` for ``or``: 1900 becomes a leap year), which it called high before."""
    report = HealingLoop(make_sandbox(LEAP), OfflineEngine()).run().report
    assert report.stop_reason is StopReason.HEALED and report.confidence is not None
    codes = {r.code: r.level for r in report.confidence.reasons}
    assert report.confidence.level == "medium" and codes["thin_tests"] == "medium"
    assert "only 2 of the project's tests run the edited lines (1 failing, 1 passing)" in " ".join(
        r.text for r in report.confidence.reasons
    )


class RevisingEngine(ScriptedEngine):
    """Adds a hypothesis to walk next and drops one ahead, through ``revise``'s value only, never by touching the
    list ``hypotheses`` returned."""

    def __init__(self, *args: Any, changes: dict[str, PlanChange], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.changes = changes
        self.asked: list[tuple[str, tuple[str, ...]]] = []  # (hypothesis walked, ids ahead then)

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        self.asked.append((hypothesis.id, tuple(h.id for h in ahead)))
        return self.changes.get(hypothesis.id, PlanChange())


@pytest.mark.slow
def test_the_loop_walks_the_hypotheses_an_engine_adds_and_skips_those_it_drops(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(CALC)
    still_failing = {"calc.py": FIXED.replace("a + b", "a * b")}
    engine = RevisingEngine(
        [hyp("H1", 1), hyp("H2", 2), hyp("H3", 3)],
        {},
        {"H1": [still_failing], "H2": [{"calc.py": FIXED}], "L1": [still_failing], "L2": [{"calc.py": FIXED}]},
        changes={"H1": PlanChange(follow=(hyp("L1", 4), hyp("L2", 5)), drop=frozenset({"H2"}))},
    )
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.patch is not None and report.patch.hypothesis_id == "L2"  # H2 was dropped, never walked
    walked = [(r.hypothesis.id, r.outcome) for r in report.hypotheses]
    assert [h for h, _ in walked] == ["H1", "L1", "L2", "H3"] and walked[-1][1] == "not reached"
    # Asked after each hypothesis walked on from, with what was ahead then; not after the winner.
    assert engine.asked == [("H1", ("H2", "H3")), ("L1", ("L2", "H3"))]
