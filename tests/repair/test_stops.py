"""Every way the healing loop stops is a report: budgets, the deadline, a sandbox that cannot re-run the tests.

The loop runs against the real sandbox and real pytest on small projects. Time is never measured: a fake clock
is injected into the loop and moved forward at exact points (a sandbox or engine wrapper moves it while a step
runs), so each test puts the deadline exactly where it wants, on any machine.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from selfix_action.repair.loop import HealingLoop, LoopConfig
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import StopReason, render_markdown
from selfix_action.repair.review import Review
from selfix_action.repair.values import (
    CallProbe,
    CandidateCheck,
    Evidence,
    Hypothesis,
    ProbeTarget,
    QATest,
    TestRun,
)
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import CALC, FIXED, write_project
from tests.helpers.scripted_engine import ScriptedEngine, hyp

NOISY = FIXED.replace("return x * 2", "return x + x")  # fixes add, plus a hunk minimization can drop
GOOD_QA = QATest(path="test_qa_h1.py", source="from calc import add\n\ndef test_it():\n    assert add(1, 1) == 2\n")
LIMIT = 100.0  # the loop's time limit in these tests, in fake seconds


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ClockedSandbox:
    """The real sandbox, with the fake clock moved forward by ``advance[n]`` seconds during its n-th test run
    (``run_tests`` and each check of ``check_candidates`` count, from 1); it records what each run was asked."""

    def __init__(self, real: PytestSandbox, clock: FakeClock, advance: Mapping[int, float]) -> None:
        self.real = real
        self.clock = clock
        self.advance = dict(advance)
        self.calls: list[tuple[str, ...] | None] = []
        self.parallel_checks = real.parallel_checks

    def _tick(self, nodeids: Sequence[str] | None) -> None:
        self.calls.append(None if nodeids is None else tuple(nodeids))
        self.clock.now += self.advance.get(len(self.calls), 0.0)

    def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
        run = self.real.run_tests(nodeids, **options)
        self._tick(nodeids)
        return run

    def check_candidates(self, checks: Sequence[CandidateCheck]) -> list[TestRun]:
        runs = self.real.check_candidates(checks)
        for check in checks:
            self._tick(check.nodeids)
        return runs

    def read_file(self, path: str) -> str:
        return self.real.read_file(path)

    def source_files(self) -> list[str]:
        return self.real.source_files()

    def patched(self, files: Mapping[str, str]) -> AbstractContextManager[None]:
        return self.real.patched(files)

    def probe_calls(
        self, targets: Sequence[ProbeTarget], tests: Sequence[str], versions: Mapping[str, Mapping[str, str]]
    ) -> CallProbe:
        return self.real.probe_calls(targets, tests, versions)


def _whole_suite_runs(sandbox: ClockedSandbox) -> int:
    return sum(1 for call in sandbox.calls if call is None)


# -- the test-run budget -------------------------------------------------------------------------------------
def test_a_test_run_budget_stop_during_reproduction_is_a_report(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """The re-run of the failing test does not fit in the budget: a TEST_RUN_BUDGET report, no exception
    (the budget stop used to escape ``run()`` and ``selfix fix`` ended in a traceback)."""
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": FIXED}]})
    result = HealingLoop(make_sandbox(CALC), engine, LoopConfig(max_test_runs=1)).run()
    report = result.report
    assert report.stop_reason is StopReason.TEST_RUN_BUDGET
    assert report.exit_code == 1 and result.files is None
    assert report.test_runs == 1
    assert report.tests_before["tests/test_calc.py::test_add"] == "failed"  # the baseline is still reported
    assert report.flaky_tests == ()  # nothing was decided about flakiness
    assert any("before re-run 1" in note for note in report.notes)
    assert "test run budget exhausted" in render_markdown(report)


@pytest.mark.slow
def test_a_test_run_budget_stop_before_the_qa_test_is_a_report(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """No room for the QA run (and a candidate, and its confirmation) after reproduction: the loop stops with
    TEST_RUN_BUDGET before asking for the QA test, instead of raising out of ``run()`` from the QA run."""
    engine = ScriptedEngine([hyp("H1", 1)], {"H1": GOOD_QA}, {"H1": [{"calc.py": FIXED}]})
    report = HealingLoop(make_sandbox(CALC), engine, LoopConfig(max_test_runs=2)).run().report
    assert report.stop_reason is StopReason.TEST_RUN_BUDGET
    assert report.test_runs == 2  # baseline and re-run; the QA test never ran
    assert report.f2p_tests == ("tests/test_calc.py::test_add",)
    assert any("before hypothesis 1 was tried" in note for note in report.notes)


@pytest.mark.slow
@pytest.mark.parametrize("max_test_runs", [4, 6, 9])
def test_a_verified_candidate_is_never_thrown_away_for_the_test_run_budget(
    make_sandbox: Callable[..., PytestSandbox], max_test_runs: int
) -> None:
    """A two-hunk fix: 2 runs reproduce it, 2 verify it, minimization tries each hunk (1-2 runs each) and the
    confirmation takes 1. Whatever the cap, a candidate is verified only if its confirmation fits: then it is the
    result (minimized as far as the budget allows); otherwise no candidate is tried at all. (The loop used to
    verify it, run out in minimization or confirmation, and report TEST_RUN_BUDGET without the patch.)"""
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": NOISY}]})
    result = HealingLoop(make_sandbox(CALC), engine, LoopConfig(max_test_runs=max_test_runs)).run()
    report = result.report
    assert report.test_runs <= max_test_runs
    if max_test_runs == 4:  # 2 + 2 to verify + 2 kept for confirmation do not fit
        assert report.stop_reason is StopReason.TEST_RUN_BUDGET
        assert report.candidates_tried == 0 and result.files is None
        return
    assert report.stop_reason is StopReason.HEALED and report.exit_code == 0
    assert report.patch is not None and report.patch.confirmed
    assert report.tests_after == {t: "passed" for t in report.tests_before}
    if max_test_runs == 6:  # no room for a minimization trial: confirmed as verified, both hunks
        assert result.files == {"calc.py": NOISY}
        assert report.patch.hunks == 2
        assert report.verification == "confirmed on the whole suite; not fully minimized: test-run budget"
    else:
        assert result.files == {"calc.py": FIXED}
        assert report.patch.hunks == 1 and report.verification == "confirmed on the whole suite"


# -- the sandbox cannot re-run the failing tests ----------------------------------------------------------------
# A test command that runs pytest the first time and then breaks: exit 4 with no output (the sandbox raises
# SandboxError: "failed before running any test"), or exit 5 without a single result.
BREAKS_AFTER_FIRST_RUN = (
    "import pathlib, sys\n"
    "mark = pathlib.Path('.selfix_ran_once')\n"
    "if mark.exists():\n"
    "    sys.exit({code})\n"
    "mark.write_text('x')\n"
    "import pytest\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("code", [4, 5], ids=["sandbox-error", "no-results"])
def test_a_sandbox_that_cannot_rerun_the_failures_is_not_flakiness(tmp_path: Path, code: int) -> None:
    """The re-run crashes (or gives no result): that is a SANDBOX_ERROR stop (exit 2), with the reason in the
    notes, never "probably flaky" (it used to be NOT_REPRODUCIBLE, exit 3, every failure listed as flaky)."""
    repo = write_project(tmp_path / "p", CALC)
    command = [sys.executable, "-c", BREAKS_AFTER_FIRST_RUN.format(code=code)]
    with PytestSandbox(repo, command, limits=Limits(wall_seconds=60), scratch_parent=tmp_path) as sandbox:
        engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": FIXED}]})
        report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.SANDBOX_ERROR
    assert report.exit_code == 2
    assert report.flaky_tests == () and report.f2p_tests == ()
    assert report.tests_before["tests/test_calc.py::test_add"] == "failed"
    [note] = [n for n in report.notes if "cannot be called flaky" in n]
    assert "tests/test_calc.py::test_add" in note
    assert f"exit {code}" in note


# -- nothing to point at ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_failure_that_reaches_no_project_source_has_no_suspects(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox({"mod.py": "X = 1\n", "tests/test_m.py": "def test_x():\n    assert 1 == 2\n"})
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"mod.py": "X = 2\n"}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.NO_SUSPECTS
    assert report.exit_code == 1
    assert report.f2p_tests == ("tests/test_m.py::test_x",)
    assert [f.nodeid for f in report.failures] == ["tests/test_m.py::test_x"]
    assert report.hypotheses == () and report.candidates_tried == 0


# -- the loop's own time limit -----------------------------------------------------------------------------------
def test_a_time_limit_of_zero_stops_before_any_test_runs(make_sandbox: Callable[..., PytestSandbox]) -> None:
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": FIXED}]})
    report = HealingLoop(make_sandbox(CALC), engine, LoopConfig(time_limit_seconds=0)).run().report
    assert report.stop_reason is StopReason.TIME_LIMIT
    assert report.test_runs == 0 and report.exit_code == 1


@pytest.mark.slow
@pytest.mark.parametrize(("run", "runs_made"), [(1, 1), (2, 2)], ids=["during-the-baseline", "during-the-rerun"])
def test_the_deadline_is_checked_between_reproduction_and_localization(
    make_sandbox: Callable[..., PytestSandbox], run: int, runs_made: int
) -> None:
    """The time limit passes while the baseline (or the re-run) runs: the loop stops with TIME_LIMIT before its
    next step, not only before taking a candidate. Why a fake clock: see the module docstring."""
    clock = FakeClock()
    sandbox = ClockedSandbox(make_sandbox(CALC), clock, {run: LIMIT + 1})
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": FIXED}]})
    loop = HealingLoop(sandbox, engine, LoopConfig(time_limit_seconds=LIMIT), clock=clock)
    report = loop.run().report
    assert report.stop_reason is StopReason.TIME_LIMIT
    assert len(sandbox.calls) == runs_made == report.test_runs
    assert report.suspicious_lines == () and report.hypotheses == ()
    assert report.timings["total"] == LIMIT + 1  # timings are on the loop's clock too


class SlowDetective(ScriptedEngine):
    """The Detective's (model) call takes the rest of the time limit."""

    def __init__(self, clock: FakeClock, *args: Any) -> None:
        super().__init__(*args)
        self.clock = clock
        self.qa_asked = 0

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        self.clock.now += LIMIT
        return super().hypotheses(evidence, sandbox, limit)

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        self.qa_asked += 1
        return super().qa_test(hypothesis, evidence, sandbox)


@pytest.mark.slow
def test_the_deadline_is_checked_before_the_qa_test(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """Time runs out while hypothesizing: no QA test is asked for or run (it used to run the QA test and only
    stop before the first candidate)."""
    clock = FakeClock()
    sandbox = ClockedSandbox(make_sandbox(CALC), clock, {})
    engine = SlowDetective(clock, [hyp("H1", 1)], {"H1": GOOD_QA}, {"H1": [{"calc.py": FIXED}]})
    report = HealingLoop(sandbox, engine, LoopConfig(time_limit_seconds=LIMIT), clock=clock).run().report
    assert report.stop_reason is StopReason.TIME_LIMIT
    assert engine.qa_asked == 0
    assert len(sandbox.calls) == 2 == report.test_runs  # baseline and re-run only
    assert report.f2p_tests == ("tests/test_calc.py::test_add",)  # the evidence is in the report


@pytest.mark.slow
def test_a_candidate_verified_as_time_runs_out_is_kept_unconfirmed(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """The deadline passes during the winning candidate's verification (its 2nd check, the 4th test run):
    neither minimization nor the whole-suite confirmation starts after it, and the verified patch is still the
    result, marked as not confirmed (VERIFIED_UNCONFIRMED, exit 1). It used to minimize and confirm anyway,
    past the deadline. Why a fake clock: see the module docstring."""
    clock = FakeClock()
    sandbox = ClockedSandbox(make_sandbox(CALC), clock, {4: LIMIT})
    doubt = Review(verdict="partial", reason="r", missed="m")
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": NOISY}]}, review=doubt)
    result = HealingLoop(sandbox, engine, LoopConfig(time_limit_seconds=LIMIT), clock=clock).run()
    report = result.report
    assert report.stop_reason is StopReason.VERIFIED_UNCONFIRMED
    # Only a confirmed patch is reviewed: no review asked for, none missed for lack of time.
    assert engine.review_requests == [] and report.review is None
    assert not any(note.startswith("no review") for note in report.notes)
    assert report.exit_code == 1
    assert len(sandbox.calls) == 4 == report.test_runs  # baseline, re-run, F2P check, guarding P2P check
    assert _whole_suite_runs(sandbox) == 1  # the baseline only: no confirmation ran
    assert result.files == {"calc.py": NOISY}  # the candidate as verified (minimization never started)
    assert result.originals == {"calc.py": sandbox.read_file("calc.py")}
    assert report.patch is not None and not report.patch.confirmed and report.patch.hunks == 2
    assert report.verification == (
        "F2P and guarding P2P only; not confirmed on the whole suite: time limit; not fully minimized: time limit"
    )
    assert report.tests_after == {}
    assert report.hypotheses[0].outcome == "healed by candidate 1 (not confirmed on the whole suite)"
    assert any(note.startswith("the patch is not confirmed") for note in report.notes)
    markdown = render_markdown(report)
    assert "verified unconfirmed" in markdown and "Checked: F2P and guarding P2P only" in markdown


@pytest.mark.slow
def test_the_time_a_confirmation_needs_is_kept_back_from_candidates(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    """The baseline took 30 (fake) seconds, so a confirmation is expected to take as long: with 20 left after
    reproduction the loop takes no candidate it could not confirm, and stops with TIME_LIMIT."""
    clock = FakeClock()
    sandbox = ClockedSandbox(make_sandbox(CALC), clock, {1: 30.0, 2: LIMIT - 50})
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": FIXED}]})
    report = HealingLoop(sandbox, engine, LoopConfig(time_limit_seconds=LIMIT), clock=clock).run().report
    assert report.stop_reason is StopReason.TIME_LIMIT
    assert report.candidates_tried == 0 and len(sandbox.calls) == 2


@pytest.mark.slow
def test_a_candidate_verified_in_time_is_minimized_and_confirmed(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """The control for the tests above: the same loop and clock, with time to spare, heals and confirms."""
    clock = FakeClock()
    sandbox = ClockedSandbox(make_sandbox(CALC), clock, {n: 1.0 for n in range(1, 20)})
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"calc.py": NOISY}]})
    result = HealingLoop(sandbox, engine, LoopConfig(time_limit_seconds=LIMIT), clock=clock).run()
    assert result.report.stop_reason is StopReason.HEALED
    assert result.files == {"calc.py": FIXED} and result.report.verification == "confirmed on the whole suite"
    assert _whole_suite_runs(sandbox) == 2  # the baseline and the confirmation
