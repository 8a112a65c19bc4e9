"""The interfaces the healing loop talks to. Implementations live at the edges (sandbox/, offline/, models/)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from selfix_action.repair.report import Confidence, StopReason, Usage
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import (
    CallProbe,
    CandidateCheck,
    CandidatePatch,
    Evidence,
    Hypothesis,
    PlanChange,
    ProbeTarget,
    PropertyLibrary,
    QATest,
    TestRun,
    Verification,
)


class Sandbox(Protocol):
    """Runs the project's tests on a scratch copy of the repository; the user's tree is never touched."""

    parallel_checks: int  # how many candidates ``check_candidates`` may check at once (1: one at a time)

    def run_tests(
        self,
        nodeids: Sequence[str] | None = None,
        *,
        stop_first: bool = False,
        coverage: bool = False,
        extra_test_files: Mapping[str, str] | None = None,
        warm: bool = False,
        wall_seconds: float | None = None,
        time_left: float | None = None,
    ) -> TestRun:
        """Run the given tests (None: the whole suite). ``extra_test_files`` are scratch QA tests (paths under
        ``QA_TEST_DIR``). ``warm`` allows a faster, already-started worker for repeated candidate checks.
        ``time_left``: the heal's remaining seconds; the run (its retries past a hung test included) ends by then,
        and ``TestRun.deadline_reached`` says it was cut there."""
        ...

    def read_file(self, path: str) -> str: ...

    def source_files(self) -> list[str]:
        """Repo-relative paths of the project's editable Python source files."""
        ...

    def patched(self, files: Mapping[str, str]) -> AbstractContextManager[None]:
        """Temporarily replace whole files in the scratch copy; restored on exit."""
        ...

    def prepare_hypothesis(self) -> PropertyLibrary:
        """Make the Hypothesis library importable by the project's interpreter for property tests (the project's
        own, or one provided for its Python version); unavailable (``note`` says why) when it cannot be."""
        ...

    def check_candidates(self, checks: Sequence[CandidateCheck]) -> list[TestRun]:
        """One warm run per check, of its tests on its own patched files, stopping at the first failure; up to
        ``parallel_checks`` at once. A check whose tests cannot run at all gets a run without results."""
        ...

    def probe_calls(
        self, targets: Sequence[ProbeTarget], tests: Sequence[str], versions: Mapping[str, Mapping[str, str]]
    ) -> CallProbe:
        """Record the calls ``tests`` make to ``targets`` on the unpatched code and replay them, with variations,
        on the unpatched code (twice) and on each version (label: its files); ``CallProbe.note`` says why not."""
        ...


class EngineStopped(Exception):
    """Raised by an engine that cannot go on (budget spent, model unusable); the loop stops with ``reason``.

    ``ENVIRONMENT`` with ``tests``: only those failing tests come from the environment; the loop leaves them
    out once and goes on with the rest (when none would be left, it stops)."""

    def __init__(self, reason: StopReason, detail: str, tests: Sequence[str] = ()) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.tests = tuple(tests)


class Engine(Protocol):
    """Detective, QA, Patcher and Reviewer roles. The offline engine and the LLM engines implement this.

    The loop walks the hypotheses ``hypotheses`` returned, in its own list: an engine changes what is ahead only
    through the value ``revise`` returns (``--engine auto`` hands over to its LLM engine that way)."""

    name: str

    @property
    def independent_candidates(self) -> bool:
        """True when ``candidates`` never reads ``history`` (no feedback): the loop may then verify several
        candidates at once, ahead of the one it is looking at."""
        ...

    def usage(self) -> Usage:
        """What the engine spent so far (calls, tokens, cost per role); ``Usage()`` for the offline engine."""
        ...

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        """Detective: up to ``limit`` distinct root-cause hypotheses, most likely first."""
        ...

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        """QA: a reproduction test that must fail on the unpatched code. None: the F2P tests serve.
        ``feedback``: why the previous QA test of this hypothesis was broken (the loop asks once more).
        ``disputed``: the previous QA test, and its failure on candidates that pass every failing test: the test
        may assert what the fix does not make true (the loop asks once, and walks the hypothesis again)."""
        ...

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        """Does a confirmed patch at this confidence end the heal? False: the loop keeps it and walks on, and
        the better of it and what comes later wins (``--engine auto`` accepts an offline patch only at high)."""
        ...

    def candidates(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        history: Sequence[Verification],
    ) -> Iterator[CandidatePatch]:
        """Patcher: candidate patches for one hypothesis. ``history`` grows with each failed verification
        of this hypothesis, so an engine can use the pruned failure as feedback for its next try."""
        ...

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        """Once the loop walked ``hypothesis``'s candidates (every verdict in, ``accepts`` asked if one healed)
        and walks on: what changes in ``ahead``, the hypotheses it would walk next. Not asked for a hypothesis
        that was not exposed (its candidates were never asked for), nor when the walk ends."""
        ...

    def review(self, request: ReviewRequest) -> Review | None:
        """Reviewer: a verdict on a confirmed patch (complete, partial or wrong, with the reason), asked once per
        heal. None: the engine has no reviewer (the offline engine). Raises ``EngineStopped`` when it cannot
        answer (its budget, the model, no usable answer): the heal stands, without a review."""
        ...

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        """QA settling a disagreement: a test of the right outcome on the inputs (``disagreements``, a table) where
        two verified patches behave differently. None: the engine cannot, and the disagreement stays."""
        ...

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        """Patcher, once more, after the reviewer called the confirmed patch (``diff``) partial or wrong and named
        a case it misses (``review.missed``): one whole patch that fixes that case too, which the loop verifies,
        confirms and has reviewed like the first. None: none to offer (an engine without a reviewer). Raises
        ``EngineStopped`` like the other roles when it cannot answer."""
        ...

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        """An independent second solution for ``hypothesis`` once a patch is confirmed: a Patcher answer that never
        saw that patch nor any failed attempt (its own context, its own sample; the loop compares the two on inputs
        beyond the tests). None: none to offer (the offline engine). Raises ``EngineStopped`` like the other roles
        when it cannot answer."""
        ...
