"""repair/verify.py: the budget's rules and the verifier's edge cases.

Most of verification runs against the real sandbox in test_loop.py and test_stops.py. The states here (the
minimized patch breaks the whole suite and the budget then allows no second confirmation; the cap reached in the
middle of a batch) cannot be reached on purpose with a real project, so a scripted sandbox plays them: it
"runs" tests by looking up their status for the files currently patched in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from selfix_action.errors import SandboxError
from selfix_action.repair.config import LoopConfig
from selfix_action.repair.report import StopReason
from selfix_action.repair.values import (
    CandidateCheck,
    CandidatePatch,
    Evidence,
    QATest,
    TestResult,
    TestRun,
    TestStatus,
    VerifyStage,
)
from selfix_action.repair.verify import (
    CONFIRM_RUNS,
    Budget,
    Confirmation,
    Minimized,
    Stop,
    Verifier,
    verification_summary,
)

F2P, P2P, OTHER = "tests/test_m.py::test_fixed", "tests/test_m.py::test_guard", "tests/test_o.py::test_other"
ORIGINAL = "def f():\n    return 0\n\n\ndef g():\n    return 1\n"
WHOLE = "def f():\n    return 42\n\n\ndef g():\n    return 2\n"  # two hunks
MINIMIZED = "def f():\n    return 42\n\n\ndef g():\n    return 1\n"
EVIDENCE = Evidence(
    f2p_tests=(F2P,),
    p2p_tests=(P2P, OTHER),
    failures=(),
    suspicious_lines=(),
    suspicious_functions=(),
    coverage_used=False,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ScriptedSandbox:
    """Test statuses as a function of the text of m.py patched in; counts the runs it was asked for."""

    parallel_checks = 1

    def __init__(self, statuses: Callable[[str], Mapping[str, TestStatus]]) -> None:
        self.statuses = statuses
        self.text = ORIGINAL
        self.runs: list[tuple[str, tuple[str, ...] | None]] = []

    @contextmanager
    def patched(self, files: Mapping[str, str]) -> Iterator[None]:
        before, self.text = self.text, files.get("m.py", self.text)
        try:
            yield
        finally:
            self.text = before

    def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
        self.runs.append((self.text, None if nodeids is None else tuple(nodeids)))
        statuses = self.statuses(self.text)
        wanted = statuses if nodeids is None else {n: s for n, s in statuses.items() if n in nodeids}
        return TestRun(results={n: TestResult(nodeid=n, status=s) for n, s in wanted.items()})

    def check_candidates(self, checks: Sequence[CandidateCheck]) -> list[TestRun]:
        runs = []
        for check in checks:
            with self.patched(check.files):
                runs.append(self.run_tests(check.nodeids))
        return runs

    def read_file(self, path: str) -> str:
        if path != "m.py":
            raise OSError(path)
        return ORIGINAL

    def source_files(self) -> list[str]:
        return ["m.py"]


def _statuses(text: str) -> dict[str, TestStatus]:
    """test_fixed needs f fixed; test_other (not a guard: it is not selected) needs g's change too once f is
    fixed, so it breaks with the minimized patch only; test_guard always passes."""
    fixed = "return 42" in text
    other_ok = not fixed or "return 2" in text
    ok, bad = TestStatus.PASSED, TestStatus.FAILED
    return {F2P: ok if fixed else bad, P2P: ok, OTHER: ok if other_ok else bad}


def _candidate(text: str, number: int = 1) -> CandidatePatch:
    return CandidatePatch(
        id=f"c{number}", hypothesis_id="H1", description=f"c{number}", template="t", files={"m.py": text}
    )


# -- Budget ------------------------------------------------------------------------------------------------
def test_budget_allows_runs_and_time_with_what_is_kept_back() -> None:
    clock = FakeClock()
    budget = Budget(LoopConfig(max_test_runs=10, time_limit_seconds=60), clock)
    budget.test_runs = 6
    assert budget.allows(4) is None
    assert budget.allows(5) == Stop(StopReason.TEST_RUN_BUDGET)
    assert budget.allows(3, keep_runs=2) == Stop(StopReason.TEST_RUN_BUDGET)
    assert budget.allows(2, keep_runs=2) is None
    clock.now = 50
    assert budget.allows(1, keep_seconds=9) is None
    assert budget.allows(1, keep_seconds=10) == Stop(StopReason.TIME_LIMIT)
    clock.now = 60
    assert budget.allows() == Stop(StopReason.TIME_LIMIT)  # the deadline itself: no time left
    assert Stop(StopReason.TIME_LIMIT).why == "time limit" and Stop(StopReason.TEST_RUN_BUDGET).why == "test-run budget"


def test_a_candidate_is_taken_only_if_its_confirmation_still_fits() -> None:
    clock = FakeClock()
    budget = Budget(LoopConfig(max_test_runs=10, max_candidates=3, time_limit_seconds=60), clock)
    budget.test_runs = 4
    assert budget.may_take(0, 2) is None  # 4 + 2 + CONFIRM_RUNS = 8
    assert budget.may_take(1, 2) is None  # a second in the same batch: 4 + 4 + 2 = 10
    assert budget.may_take(2, 2) == Stop(StopReason.TEST_RUN_BUDGET)
    budget.candidates_tried = 3
    assert budget.may_take(0, 2) == Stop(StopReason.CANDIDATE_BUDGET)
    budget.candidates_tried = 0
    budget.confirm_seconds = 15  # the baseline took 15 s: a confirmation will take about as long
    clock.now = 44
    assert budget.may_take(0, 2) is None
    clock.now = 45
    assert budget.may_take(0, 2) == Stop(StopReason.TIME_LIMIT)
    assert CONFIRM_RUNS == 2


def test_timings_are_on_the_budget_clock() -> None:
    clock = FakeClock()
    budget = Budget(LoopConfig(), clock)
    with budget.timed("verify"):
        clock.now += 2.5
    with budget.timed("verify"):
        clock.now += 1
    assert budget.timings == {"verify": 3.5}


# -- Verifier --------------------------------------------------------------------------------------------
def test_the_baseline_measures_what_a_confirmation_is_given() -> None:
    clock = FakeClock()

    class SlowSandbox(ScriptedSandbox):
        def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
            clock.now += 12
            return super().run_tests(nodeids, **options)

    verifier = Verifier(SlowSandbox(_statuses), LoopConfig(), clock=clock)
    verifier.baseline()
    assert verifier.budget.confirm_seconds == 12 and verifier.budget.test_runs == 1
    assert set(verifier.baseline_seconds) == {F2P, P2P, OTHER}


def test_verified_ends_with_the_stop_when_the_budget_ends_it() -> None:
    sandbox = ScriptedSandbox(_statuses)
    verifier = Verifier(sandbox, LoopConfig(max_candidates=2))
    asked: list[int] = []

    def candidates() -> Iterator[CandidatePatch]:  # an engine whose every candidate may cost a model call
        for n in (1, 2, 3):
            asked.append(n)
            yield _candidate(ORIGINAL.replace("return 0", f"return {n}"), n)

    items = list(verifier.verified(candidates(), None, EVIDENCE, set()))
    assert [type(item).__name__ for item in items] == ["tuple", "tuple", "Stop"]
    assert items[-1] == Stop(StopReason.CANDIDATE_BUDGET)
    assert verifier.budget.candidates_tried == 2
    assert asked == [1, 2]  # the engine is not asked for a candidate the budget cannot take


def test_the_same_program_is_verified_once() -> None:
    sandbox = ScriptedSandbox(_statuses)
    verifier = Verifier(sandbox, LoopConfig())
    again = _candidate(WHOLE.replace("return 42", "return  42"), 2)  # formatting aside, the same program
    items = list(verifier.verified([_candidate(WHOLE), again], None, EVIDENCE, set()))
    assert len(items) == 1 and verifier.budget.candidates_tried == 1


def test_minimization_stops_when_a_trial_would_eat_into_the_confirmation() -> None:
    sandbox = ScriptedSandbox(_statuses)
    verifier = Verifier(sandbox, LoopConfig(max_test_runs=3))
    minimized = verifier.minimize(_candidate(WHOLE), None, EVIDENCE)
    assert minimized == Minimized({"m.py": WHOLE}, cut_short="test-run budget")
    assert sandbox.runs == []


def test_a_minimized_patch_that_breaks_the_suite_falls_back_to_the_verified_one() -> None:
    sandbox = ScriptedSandbox(_statuses)
    verifier = Verifier(sandbox, LoopConfig())
    confirmation = verifier.confirm({"m.py": MINIMIZED}, _candidate(WHOLE), EVIDENCE)
    assert confirmation.confirmed and confirmation.files == {"m.py": WHOLE}
    assert "the minimized patch broke tests/test_o.py::test_other: failed" in confirmation.note
    assert [files for files, nodeids in sandbox.runs] == [MINIMIZED, WHOLE]


def test_a_verified_patch_the_budget_cannot_confirm_is_kept_unconfirmed() -> None:
    """The minimized patch broke the whole suite and the cap allows no second confirmation: the candidate as
    verified comes back, unconfirmed, instead of being dropped."""
    sandbox = ScriptedSandbox(_statuses)
    verifier = Verifier(sandbox, LoopConfig(max_test_runs=1))
    confirmation = verifier.confirm({"m.py": MINIMIZED}, _candidate(WHOLE), EVIDENCE)
    assert not confirmation.confirmed and confirmation.rejected is None
    assert confirmation.files == {"m.py": WHOLE} and confirmation.not_run == "test-run budget"
    assert "minimized patch broke" in confirmation.note


def test_no_confirmation_starts_after_the_deadline() -> None:
    clock = FakeClock()
    sandbox = ScriptedSandbox(_statuses)
    verifier = Verifier(sandbox, LoopConfig(time_limit_seconds=10), clock=clock)
    clock.now = 10
    confirmation = verifier.confirm({"m.py": WHOLE}, _candidate(WHOLE), EVIDENCE)
    assert confirmation == Confirmation({"m.py": WHOLE}, not_run="time limit")
    assert sandbox.runs == []


def test_a_patch_that_breaks_the_suite_either_way_is_rejected() -> None:
    sandbox = ScriptedSandbox(lambda text: {F2P: TestStatus.PASSED, P2P: TestStatus.PASSED, OTHER: TestStatus.FAILED})
    verifier = Verifier(sandbox, LoopConfig())
    confirmation = verifier.confirm({"m.py": MINIMIZED}, _candidate(WHOLE), EVIDENCE)
    assert not confirmation.confirmed and confirmation.rejected is not None
    assert confirmation.rejected.stage is VerifyStage.FULL and confirmation.rejected.failing_tests == (OTHER,)


def test_the_verification_summary_says_what_was_and_was_not_checked() -> None:
    confirmed = Confirmation({"m.py": WHOLE}, run=TestRun())
    unconfirmed = Confirmation({"m.py": WHOLE}, not_run="test-run budget")
    assert verification_summary(Minimized({}), confirmed, None) == "confirmed on the whole suite"
    assert verification_summary(Minimized({}), unconfirmed, None) == (
        "F2P and guarding P2P only; not confirmed on the whole suite: test-run budget"
    )
    qa = QATest(path="test_qa.py", source="def test_it():\n    assert False\n")
    assert verification_summary(Minimized({}, cut_short="time limit"), unconfirmed, qa) == (
        "F2P, the QA test and guarding P2P only; not confirmed on the whole suite: test-run budget; "
        "not fully minimized: time limit"
    )


def test_the_adaptive_candidate_limit_is_a_multiple_of_the_baseline_with_a_floor() -> None:
    verifier = Verifier(ScriptedSandbox(_statuses), LoopConfig())
    assert verifier.candidate_wall(["a"]) is None  # no baseline measured: the sandbox's limits apply
    verifier.baseline_seconds = {"a": 0.01, "b": 0.5, "c": 0.3}
    assert verifier.candidate_wall(["a"]) == 1.0  # the floor
    assert verifier.candidate_wall(["b", "c"]) == 8.0  # 10 x (0.5 + 0.3)
    assert verifier.candidate_wall(["a", "_selfix_qa/test_x.py"]) is None  # a test without a baseline time
    off = Verifier(ScriptedSandbox(_statuses), LoopConfig(candidate_limit_factor=0), baseline_seconds={"b": 0.5})
    assert off.candidate_wall(["b"]) is None
    # what the baseline spent outside its tests (the runner's start, loading the project) is paid by every check
    verifier.baseline_overhead = 2.5
    assert verifier.candidate_wall(["b", "c"]) == 10.5


class AdaptiveLimitTooShortSandbox(ScriptedSandbox):
    """Every check under an adaptive wall limit is cut (a Node library's load, a busy machine); under the
    sandbox's own limit it runs."""

    def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
        if options.get("wall_seconds") is not None:
            self.runs.append((self.text, None if nodeids is None else tuple(nodeids)))
            return TestRun(timed_out=True)
        return super().run_tests(nodeids, **options)


def test_a_check_cut_by_the_adaptive_limit_runs_once_more_under_the_sandboxs_own() -> None:
    """A reader saw a right patch fail as "did not run (timed out)": the adaptive limit counts the tests' own
    seconds, and a check that hits it is run once more before the candidate is rejected."""
    sandbox = AdaptiveLimitTooShortSandbox(_statuses)
    verifier = Verifier(sandbox, LoopConfig(), baseline_seconds={F2P: 0.01, P2P: 0.01, OTHER: 0.01})
    verdict = verifier.verify(_candidate(WHOLE), None, EVIDENCE)
    assert verdict.ok, verdict
    assert len(sandbox.runs) == 4  # F2P cut, F2P again; the guarding P2P cut, again


def test_a_run_the_sandbox_cannot_make_is_a_run_without_results() -> None:
    class Crashing(ScriptedSandbox):
        def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
            raise SandboxError("the test command failed before running any test (exit 4)")

    verifier = Verifier(Crashing(_statuses), LoopConfig())
    run = verifier.run([F2P])
    assert run.results == {} and "exit 4" in run.error and verifier.budget.test_runs == 1


class TimingOutSandbox(ScriptedSandbox):
    """The whole suite on a patch is killed by the wall-clock limit (120 s) before test_other reports."""

    def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
        run = super().run_tests(nodeids, **options)
        if nodeids is not None or self.text == ORIGINAL:
            return run
        # The sandbox records the test the limit killed as TIMEOUT and runs the rest without it.
        results = {n: r for n, r in run.results.items() if n != OTHER}
        results[OTHER] = TestResult(nodeid=OTHER, status=TestStatus.TIMEOUT, exc_type="Timeout")
        return TestRun(results=results, timed_out=True, duration=120.0)


def test_a_suite_killed_by_the_time_limit_leaves_the_patch_unconfirmed_not_rejected() -> None:
    """A timing test, a loaded machine: the whole suite on the patch was killed at 120 s, nothing failed, and
    again on the second try. That says nothing against the patch (issue: correct patches were rejected this
    way): it is kept, unconfirmed."""
    sandbox = TimingOutSandbox(lambda text: dict.fromkeys((F2P, P2P, OTHER), TestStatus.PASSED))
    verifier = Verifier(sandbox, LoopConfig())
    verifier.budget.confirm_seconds = 70.0
    confirmation = verifier.confirm({"m.py": WHOLE}, _candidate(WHOLE), EVIDENCE)
    assert confirmation.rejected is None and not confirmation.confirmed
    assert (
        "did not finish within the test-run time limit, twice (120 s; 70 s without the patch)" in confirmation.not_run
    )
    assert [nodeids for _, nodeids in sandbox.runs] == [None, None]  # tried once more


class SlowOnceSandbox(TimingOutSandbox):
    """Killed by the time limit the first time only (the load passed)."""

    def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
        if nodeids is None and self.text != ORIGINAL and len(self.runs) > 0:
            return ScriptedSandbox.run_tests(self, nodeids, **options)
        return super().run_tests(nodeids, **options)


def test_a_suite_killed_once_by_the_time_limit_is_confirmed_on_the_second_try() -> None:
    sandbox = SlowOnceSandbox(lambda text: dict.fromkeys((F2P, P2P, OTHER), TestStatus.PASSED))
    confirmation = Verifier(sandbox, LoopConfig()).confirm({"m.py": WHOLE}, _candidate(WHOLE), EVIDENCE)
    assert confirmation.confirmed and len(sandbox.runs) == 2


def test_a_suite_that_fails_a_test_before_the_time_limit_is_a_failed_candidate() -> None:
    def statuses(text: str) -> dict[str, TestStatus]:
        return {F2P: TestStatus.PASSED, P2P: TestStatus.FAILED, OTHER: TestStatus.PASSED}

    confirmation = Verifier(TimingOutSandbox(statuses), LoopConfig()).confirm(
        {"m.py": WHOLE}, _candidate(WHOLE), EVIDENCE
    )
    assert confirmation.rejected is not None and confirmation.rejected.stage is VerifyStage.FULL
