"""Behaviour beyond the tests (repair/differential.py): the comparison on its own, and heals on small real projects
where the probe finds what the tests do not: a partial fix a second solution beats on a sibling input, and a patch
that changes what a passing test's own call returns."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.repair.differential import (
    added_attributes,
    behaviour_evidence,
    probe_targets,
    probed_tests,
    settling_rows,
)
from selfix_action.repair.loop import HealingLoop, LoopConfig
from selfix_action.repair.plausibility import probe_reasons
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import InputChange, StopReason, render_markdown
from selfix_action.repair.values import CallProbe, CandidatePatch, Evidence, Hypothesis, ProbeLine, QATest
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.playback import Playback, codes


def line(variation: str, outcome: str, *, test: str = "t.py::test_a", call: int = 1) -> ProbeLine:
    return ProbeLine(target="m.py:f", call=call, variation=variation, text="(1)", test=test, outcome=outcome)


def test_outcomes_compare_by_value_and_exception_kind_and_unstable_inputs_are_left_out() -> None:
    probe = CallProbe(
        versions={
            "before": (
                line("as recorded", "raises ValueError: not a port"),
                line("argument 1 None", "returns 1"),
                line("as recorded", "returns 2", test="t.py::test_b", call=2),
                line("argument 1 +1", "returns 0.25", call=3),
                line("argument 1 in a tuple", "raises AttributeError: 'tuple' has no attribute 'extend'"),
                line("argument 1 None", "raises TypeError: None", call=4),
                # Rebuilding the arguments ran the buggy code (scrapy-2's LocalCache): not an outcome.
                line("as recorded", "cannot rebuild the call: TypeError: '>=' not supported", call=5),
            ),
            "before again": (
                line("as recorded", "raises ValueError: not a port"),
                line("argument 1 None", "returns 1"),
                line("as recorded", "returns 2", test="t.py::test_b", call=2),
                line("argument 1 +1", "returns 0.75", call=3),
                line("argument 1 in a tuple", "raises AttributeError: 'tuple' has no attribute 'extend'"),
                line("argument 1 None", "raises TypeError: None", call=4),
            ),
            "patch": (
                line("as recorded", "raises ValueError: invalid literal"),  # the same refusal, other words
                line("argument 1 None", "returns 5"),
                line("as recorded", "returns 3", test="t.py::test_b", call=2),
                line("argument 1 +1", "returns 0.5", call=3),
                line("argument 1 in a tuple", "raises AttributeError: 'tuple' has no attribute 'extend'"),
                line("argument 1 None", "raises TypeError: None", call=4),
                line("as recorded", "returns None", call=5),
            ),
        },
        recorded=3,
    )
    evidence = behaviour_evidence(probe, {"t.py::test_a"})
    assert evidence.compared == 5 and evidence.unstable == 1
    # A sibling of the failing input that raises alike with the patch (None aside): what the reviewer is shown.
    assert [c.variation for c in evidence.still_raising] == ["as recorded", "argument 1 in a tuple"]
    assert [(c.variation, c.source) for c in evidence.changed] == [
        ("as recorded", "passing"),  # a passing test's own call comes first: the evidence against
        ("argument 1 None", "failing"),
    ]
    assert [c.test for c in evidence.outside] == ["t.py::test_b"]
    # Another value for a passing test's call is shown; a call that now raises where it returned caps the patch.
    assert [(code, level) for code, level, _ in probe_reasons(evidence)] == [("inputs_outside_changed", "high")]
    raising = evidence.model_copy(
        update={"changed": (evidence.changed[0].model_copy(update={"after": "raises KeyError: 'x'"}),)}
    )
    assert [(code, level) for code, level, _ in probe_reasons(raising)] == [("inputs_outside_failed", "medium")]


def test_a_probe_that_saw_no_failing_call_change_says_it_is_blind_to_the_fix() -> None:
    """An ESLint rule's visitor reports through its closure's ``context``: the failing test flips, yet every call
    the probe watched returns as before. Its comparisons are then no evidence for the fix, and its reasons say so
    (the level they allow stays: they never raised it)."""
    same = (line("as recorded", "returns undefined"), line("argument 1 null", "returns undefined"))
    probe = CallProbe(versions={"before": same, "before again": same, "patch": same, "second": same}, recorded=1)
    evidence = behaviour_evidence(probe, {"t.py::test_a"}, second="second", second_source="a second answer")
    assert evidence.blind and evidence.compared == 2
    reasons = {code: text for code, _, text in probe_reasons(evidence)}
    assert "does not see" in reasons["inputs_probed"] and "does not see" in reasons["second_solution_agrees"]
    fixed = CallProbe(versions={**probe.versions, "patch": (line("as recorded", "returns 1"), same[1])}, recorded=1)
    assert not behaviour_evidence(fixed, {"t.py::test_a"}).blind


def test_a_caller_of_the_edited_function_no_test_runs_is_named() -> None:
    """Pencilblue-6's kind: the fix changes what ``isFloat`` answers, and the job runner that asks it runs in no
    test. A caller some test runs is checked by that test; a name the project defines twice is anyone's."""
    from selfix_action.repair.differential import untested_callers

    sources = {
        "lib/validate.js": "function isFloat(v) {\n  return v % 1 !== 0;\n}\nfunction write(x) {\n  return x;\n}\n",
        "lib/jobs.js": "function onUpdate(step) {\n  if (isFloat(step)) {\n    progress(step);\n  }\n}\n"
        "function tested(step) {\n  return isFloat(step);\n}\nfunction save(x) {\n  return write(x);\n}\n",
        "lib/other.js": "function write(y) {\n  return y;\n}\n",
        "lib/app.py": "def use(v):\n    return is_float(v)\n",
    }
    coverage = {"test/a.js::t": {"lib/jobs.js": [7], "lib/validate.js": [2]}}
    edited = {("lib/validate.js", "isFloat"), ("lib/validate.js", "write")}
    assert untested_callers(edited, sources, coverage) == ("lib/jobs.js:onUpdate",)
    assert untested_callers({("lib/validate.js", "write")}, sources, coverage) == ()  # write: defined twice
    assert untested_callers(edited, sources, {"t": {"lib/jobs.js": [2, 7]}}) == ()


ORIGINAL_SHOP = (
    "class Cart:\n    def __init__(self):\n        self.items = []\n\n    def total(self):\n        return 0\n"
)
PATCHED_SHOP = ORIGINAL_SHOP.replace("self.items = []", "self.items = []\n        self.discount = 0").replace(
    "return 0", "return sum(self.items) - self.discount"
)


def test_a_call_failing_on_an_attribute_the_patch_adds_is_the_recordings_age_not_a_change() -> None:
    # The Cart was recorded on the unpatched code, so it has no `discount`; replayed on the patch, total() raises
    # for it. Readers saw such rows in the reviewer's table as the patch's doing.
    added = {"patch": added_attributes({"shop.py": ORIGINAL_SHOP}, {"shop.py": PATCHED_SHOP})}
    assert added == {"patch": frozenset({"discount"})}
    probe = CallProbe(
        versions={
            version: (
                line("as recorded", outcome),
                line("argument 1 None", "raises TypeError: None" if version != "patch" else "returns 3", call=2),
            )
            for version, outcome in (
                ("before", "returns 0"),
                ("before again", "returns 0"),
                ("patch", "raises AttributeError: 'Cart' object has no attribute 'discount'"),
            )
        },
        recorded=1,
    )
    assert [c.variation for c in behaviour_evidence(probe, set()).changed] == ["as recorded", "argument 1 None"]
    evidence = behaviour_evidence(probe, set(), added=added)
    assert evidence.compared == 1 and [c.variation for c in evidence.changed] == ["argument 1 None"]
    # Another attribute missing is still the patch's behaviour.
    assert len(behaviour_evidence(probe, set(), added={"patch": frozenset({"rebate"})}).changed) == 2
    dataclass_field = "from dataclasses import dataclass\n\n\n@dataclass\nclass Line:\n    qty: int\n"
    grown = dataclass_field + "    unit: str = 'pc'\n"
    assert added_attributes({"l.py": dataclass_field}, {"l.py": grown}) == frozenset({"unit"})


def test_no_probe_no_reason() -> None:
    assert probe_reasons(behaviour_evidence(CallProbe(note="no test calls the edited code"), set())) == []


def test_targets_are_the_edited_functions_and_tests_those_running_them() -> None:
    original = "def f(x):\n    return x\n\n\ndef g(x):\n    return x\n"
    patched = original.replace("    return x\n\n\ndef g", "    return x + 1\n\n\ndef g")
    targets = probe_targets({"m.py": original}, [{"m.py": patched}])
    assert [(t.id, t.first, t.last) for t in targets] == [("m.py:f", 1, 2)]
    coverage = {"t.py::test_b": {"m.py": [2]}, "t.py::test_c": {"m.py": [6]}}
    assert probed_tests(["t.py::test_a"], ["t.py::test_b", "t.py::test_c"], coverage, targets) == (
        "t.py::test_a",
        "t.py::test_b",
    )


MAILER = {
    "mailer.py": """
        def recipients(to, cc=None):
            rcpts = to[:]
            if cc:
                rcpts.extend(cc)
            return rcpts
        """,
    "tests/test_mailer.py": """
        from mailer import recipients


        def test_string_to():
            assert recipients("a@x") == ["a@x"]


        def test_lists():
            assert recipients(["a@x"], ["b@x"]) == ["a@x", "b@x"]


        def test_copy():
            to = ["a@x"]
            assert recipients(to) is not to
        """,
}
PARTIAL = "def recipients(to, cc=None):\n    if isinstance(to, str):\n        to = [to]\n    rcpts = to[:]\n"
PARTIAL += "    if cc:\n        rcpts.extend(cc)\n    return rcpts\n"
COMPLETE = PARTIAL.replace(
    "    if isinstance(to, str):\n        to = [to]\n    rcpts = to[:]\n",
    "    rcpts = [to] if isinstance(to, str) else list(to)\n",
)


class SecondOpinion(Playback):
    """Plays back one patch, and offers another as its independent second solution; ``settling``: the test its QA
    writes when the two disagree (None: it cannot settle)."""

    def __init__(self, first: dict[str, str], second: dict[str, str], settling: str | None = None) -> None:
        super().__init__("mailer.py", "recipients", [first])
        self.second = second
        self.settling = settling
        self.table = ""

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        self.table = disagreements
        return QATest(path="test_settle.py", source=self.settling) if self.settling else None

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        return CandidatePatch(id="S1", hypothesis_id="H1", description="second", template="t", files=self.second)


@pytest.mark.slow
def test_a_second_solution_that_handles_a_sibling_input_caps_a_partial_fix(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(MAILER)
    report = HealingLoop(sandbox, SecondOpinion({"mailer.py": PARTIAL}, {"mailer.py": COMPLETE})).run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.patch is not None and "isinstance(to, str)" in report.patch.diff
    assert report.behaviour is not None and report.behaviour.second_source == "an independent second Patcher answer"
    tuples = [d for d in report.behaviour.disagreements if "tuple" in d.variation]
    assert tuples and tuples[0].after.startswith("returns ['a@x'")
    assert "second_solution_differs" in codes(report)
    assert report.confidence is not None and report.confidence.level == "medium"
    markdown = render_markdown(report)
    assert "## Behaviour beyond the tests" in markdown and "second solution" in markdown


@pytest.mark.slow
def test_two_solutions_that_agree_on_every_input_support_the_patch(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(MAILER)
    again = COMPLETE.replace("list(to)", "[*to]")
    report = HealingLoop(sandbox, SecondOpinion({"mailer.py": COMPLETE}, {"mailer.py": again})).run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.behaviour is not None and report.behaviour.compared > 5
    assert report.behaviour.disagreements == ()
    assert "second_solution_agrees" in codes(report)
    assert "inputs_probed" in codes(report)


LABELS = {
    "labels.py": """
        def label(n):
            return str(n) + " items"
        """,
    "tests/test_labels.py": """
        from labels import label


        def test_none():
            assert label(0) == "no items"


        def test_some():
            assert label(2)
        """,
}
# Passes both tests, and turns label(2) into "no items": the passing test's own call, which it does not check.
OVERREACH = 'def label(n):\n    if n < 3:\n        return "no items"\n    return str(n) + " items"\n'


@pytest.mark.slow
def test_a_patch_that_changes_a_passing_tests_own_call_says_so(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(LABELS)
    report = HealingLoop(sandbox, Playback("labels.py", "label", [{"labels.py": OVERREACH}])).run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.behaviour is not None
    outside = report.behaviour.outside
    assert [(c.input, c.before, c.after) for c in outside] == [("(2)", "returns '2 items'", "returns 'no items'")]
    reason = next(r for r in report.confidence.reasons if r.code == "inputs_outside_changed")  # type: ignore[union-attr]
    assert "`label(2)`: returns '2 items' -> returns 'no items'" in reason.text


@pytest.mark.slow
def test_the_probe_can_be_turned_off(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(LABELS)
    engine = Playback("labels.py", "label", [{"labels.py": OVERREACH}])
    report = HealingLoop(sandbox, engine, LoopConfig(behaviour_probe=False)).run().report
    assert report.behaviour is None and "inputs_outside_changed" not in codes(report)


SETTLING = """
from mailer import recipients


def test_a_tuple_of_addresses_is_a_list_of_them():
    assert recipients(("a@x",)) == ["a@x"]
"""


@pytest.mark.slow
def test_qa_settles_a_disagreement_and_the_second_solution_replaces_the_partial_fix(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(MAILER)
    engine = SecondOpinion({"mailer.py": PARTIAL}, {"mailer.py": COMPLETE}, SETTLING)
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    assert "in a tuple" in engine.table  # QA was shown where the two differ
    assert report.patch is not None and "list(to)" in report.patch.diff  # the complete fix won
    assert report.behaviour is not None and "replaced it" in report.behaviour.settled
    assert "isinstance(to, str):" in report.behaviour.second_diff  # the partial fix is shown as the one dropped
    assert "second_solution_settled" in codes(report) and "second_solution_differs" not in codes(report)


@pytest.mark.slow
def test_a_settling_test_both_pass_settles_nothing(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(MAILER)
    both = SETTLING.replace('recipients(("a@x",)) == ["a@x"]', 'recipients("a@x") == ["a@x"]')
    report = HealingLoop(sandbox, SecondOpinion({"mailer.py": PARTIAL}, {"mailer.py": COMPLETE}, both)).run().report
    assert report.patch is not None and "isinstance(to, str):" in report.patch.diff
    assert report.behaviour is not None and report.behaviour.settled == ""
    assert "settles nothing: both pass it" in report.behaviour.note
    assert "second_solution_differs" in codes(report)


def test_a_table_row_shows_where_two_long_outcomes_differ() -> None:
    """The difference past a cell's width (an encoder's buffer) is shown, both cells starting just before it."""
    from selfix_action.repair.report import InputChange, change_table

    prefix = "returns this | arguments after: this.byteBuffer: ByteBuffer { _bytes: [ " + "0, " * 60
    change = InputChange(function="lib/e.js:Encoder.write", input="(1)", variation="as recorded", test="t",
                         source="failing", before=prefix + "77, 116 ] }", after=prefix + "78, 116 ] }")  # fmt: skip
    row = change_table([change], old="unpatched", new="patched")[2]
    assert "77, 116 ] }`" in row and "78, 116 ] }`" in row and row.count("`...") == 2
    short = change.model_copy(update={"before": "returns 1", "after": "returns 2"})
    assert "| `returns 1` | `returns 2` |" in change_table([short], old="a", new="b")[2]


def _disagreement(variation: str) -> InputChange:
    return InputChange(
        function="lib/long.js:writeLong",
        input="(x)",
        variation=variation,
        test="t",
        source="failing",
        before="returns 1",
        after="returns 2",
    )


def test_qa_settles_the_rows_on_real_inputs_and_those_passing_nothing_only_when_nothing_else_differs() -> None:
    recorded, sibling = _disagreement("as recorded"), _disagreement("argument 1 as a string")
    nothing = [_disagreement("argument 1 as null"), _disagreement("argument 1 as undefined"), _disagreement("x None")]
    assert settling_rows([nothing[0], recorded, nothing[1], sibling, nothing[2]]) == [recorded, sibling]
    assert settling_rows(nothing) == nothing
    assert settling_rows([]) == []
