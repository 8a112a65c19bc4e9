"""The healing loop: reproduce → localize → hypothesize → expose → patch → verify → backtrack → choose → minimize →
confirm → judge → review → broaden.

Read ``HealingLoop.run`` top to bottom: every way the loop can stop is a ``StopReason`` returned there, either
named in it or carried by a ``Stop`` value a step returned (steps never raise to stop the loop; the one
exception that leaves ``run`` is SandboxError from the baseline run, when the test command cannot run at all:
bad input, before any healing). The loop only talks to a ``Sandbox`` (runs tests on a scratch copy) and an
``Engine`` (Detective, QA, Patcher); it never touches the user's tree and never runs code itself.

Time and test runs are checked before every step (see ``verify.Budget``), and what a whole-suite confirmation
needs is kept back, so a candidate that passed verification is never thrown away: if the budget still cannot
confirm it, the loop stops with ``VERIFIED_UNCONFIRMED``. That stop exits 1 like any heal that is not proven,
yet carries the patch (``HealResult.files``, ``report.patch`` with ``confirmed=False``, ``report.verification``
saying what was checked and what was not), so a user can review it; nothing downstream takes it for a fix, as
only ``HEALED`` (exit 0) means the whole suite passed on the patch.

An engine may stop the heal (``EngineStopped``: its budget, the model, or ``ENVIRONMENT`` when it finds the
failure comes from the environment, not the code; when it names only some failing tests, those are left out
and the walk goes on with the others). An engine may also decline to end the heal at a confirmed patch
(``Engine.accepts``: ``--engine auto`` below high confidence): the patch is kept and the walk goes on; the better
of it and what comes later ends the heal.

Passing is not being right, so: candidates that cannot make sense are refused before any test (``sanity``); once
one passes, a few more are verified and the most plausible passing one is chosen (``plausibility``: overfitting
patterns, then the change in what passing tests execute); and the report's ``confidence`` judges the winner with
named reasons (``plausibility.assess_confidence``); a healed winner is shown once to the engine's reviewer, whose
verdict is one more of those reasons (``Engine.review``); a winner it calls partial or wrong goes back to the
Patcher once with the case it names, and a broader patch that passes everything the winner passed replaces it
only if the reviewer calls that one complete (``Engine.broaden``). None of this is a stop: a low-confidence
patch is still ``HEALED`` when the whole suite passed on it, and says so.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from selfix_action.repair.config import LoopConfig
from selfix_action.repair.dependencies import missing_dependencies
from selfix_action.repair.differential import (
    added_attributes,
    behaviour_evidence,
    probe_targets,
    probed_tests,
    settling_rows,
    untested_callers,
)
from selfix_action.repair.evidence import Reproduction, gather_evidence, reproduce
from selfix_action.repair.localize import enclosing_function, function_spans
from selfix_action.repair.patches import changed_line_count, hunks, program_key, unified_diff
from selfix_action.repair.paths import QA_TEST_DIR
from selfix_action.repair.plausibility import (
    Alternatives,
    BehaviourChange,
    Pattern,
    assess_confidence,
    behaviour_change,
    overfitting_patterns,
    plausibility,
)
from selfix_action.repair.properties import PropertyChecks
from selfix_action.repair.protocols import Engine, EngineStopped, Sandbox
from selfix_action.repair.report import (
    STOP_EXPLANATIONS,
    BehaviourEvidence,
    Confidence,
    HealReport,
    HypothesisRecord,
    PatchRecord,
    StopReason,
    change_table,
)
from selfix_action.repair.reported import ReportedTest
from selfix_action.repair.reported_error import (
    MAX_ATTEMPTS,
    Reproducer,
    ReproductionRequest,
    judge_reproduction,
    locate_frames,
    raise_site,
    render_error,
)
from selfix_action.repair.review import Review, review_request
from selfix_action.repair.services import unreachable_services
from selfix_action.repair.values import (
    CallProbe,
    CandidatePatch,
    Evidence,
    Hypothesis,
    QATest,
    ReproductionRecord,
    TestRun,
    Verification,
    VerifyStage,
)
from selfix_action.repair.verify import (
    CONFIRM_RUNS,
    Budget,
    Exposure,
    Minimized,
    Stop,
    Trace,
    Verifier,
    noop_trace,
    verification_summary,
)
from selfix_action.tracebacks import ReportedError

__all__ = ["HealResult", "HealingLoop", "LoopConfig"]

MAX_RECORDED_REJECTIONS = 5
# Passing candidates confirmed after the most plausible one when it changes what passing tests execute.
BEHAVIOUR_RECHECKS = 2


@dataclass
class HealResult:
    report: HealReport
    # The verified patch as whole new file texts: confirmed when the stop is HEALED, not confirmed on the whole
    # suite when it is VERIFIED_UNCONFIRMED (see report.verification); None when no candidate passed verification.
    files: dict[str, str] | None
    originals: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Passing:
    """A candidate that passed verification, with the overfitting patterns it shows."""

    candidate: CandidatePatch
    patterns: tuple[Pattern, ...]

    @property
    def plausibility(self) -> float:
        return plausibility(self.patterns)


@dataclass
class _Window:
    """After the first passing candidate: how many more may be verified, and until when."""

    limit: int  # candidates after the first passing one (LoopConfig.alternatives)
    deadline: float  # on the budget's clock
    checked: int = 0

    def closed(self, now: float) -> bool:
        return self.checked >= self.limit or now >= self.deadline


@dataclass(frozen=True)
class _Winner:
    candidate: CandidatePatch
    files: dict[str, str]
    after: TestRun | None  # the whole suite on ``files``; None when it could not be confirmed
    verification: str  # what it was checked on (verify.verification_summary)
    others: tuple[CandidatePatch, ...] = ()  # passing candidates it was preferred to (not confirmed)
    alternatives_checked: int = 0  # candidates verified after the first passing one
    cut_short: str = ""  # why the window closed early ("time limit", ...); "" if it did not
    behaviour: BehaviourChange | None = None  # what it changed of the passing tests' paths
    confidence: Confidence | None = None  # the confidence rule's verdict (HealingLoop._confidence)
    probe: BehaviourEvidence | None = None  # beyond the tests: a second solution and the replayed inputs
    hypothesis: Hypothesis | None = None  # the hypothesis it answers, as the Patcher saw it
    agreement: str = ""  # why the hypothesis, its QA test and the verification agree on it (_agreement)
    property_held: str = ""  # what the hypothesis' property test showed of it (properties.settle)
    review: Review | None = None  # the reviewer's verdict, asked once the heal's winner is confirmed
    exposure: Exposure | None = None  # how its hypothesis was exposed (its QA test, which a broader patch must pass)
    broadened_from: str = ""  # the reviewer's case a first patch missed, when this one broadened it (_broadened)


_LEVELS = {"low": 0, "medium": 1, "high": 2}


def _level(winner: _Winner) -> str:
    return winner.confidence.level if winner.confidence else "unknown"


def _standing(winner: _Winner) -> str:
    if winner.after is None:
        return "not confirmed on the whole suite"
    return f"{_level(winner)} confidence"


def _better(kept: _Winner | None, new: _Winner | None) -> _Winner | None:
    """The patch to keep of two: a confirmed one over an unconfirmed one, then the higher confidence; at equal
    confidence the later one, which the engine after the cheap one proposed (on real bugs the offline
    templates' patches below high were mostly wrong where the LLM engine's were right: docs/BENCHMARK.md)."""
    if kept is None or new is None:
        return new or kept

    def rank(winner: _Winner) -> tuple[int, int]:
        level = winner.confidence.level if winner.confidence is not None else "low"
        return (winner.after is not None, _LEVELS.get(level, 0))

    return kept if rank(kept) > rank(new) else new


ENVIRONMENT_NARROWINGS = 3  # times a heal may leave failing tests out as the environment's
# Candidates of one hypothesis that pass every failing test and fail only its QA test before the test itself is
# put in doubt (QA asked once to read it again: ``_dispute``).
DISPUTE_AFTER = 2
AGREEMENT_MARGIN = 5  # lines around the hypothesis' range that still count as the place it named


def _agreement(hypothesis: Hypothesis, exposure: Exposure, originals: dict[str, str], files: dict[str, str]) -> str:
    """Why the hypothesis, its QA test and the verification agree on the winner, or "" when they do not: a QA
    test of its own exposed it (failed on the unpatched code for a real reason; the winner passed it with the
    failing tests), and the patch edits the file and lines, or the function, of a place the hypothesis named."""
    if exposure.qa is None or not exposure.exposed or not hypothesis.file:
        return ""
    for location in hypothesis.locations():
        low = min(location.lines, default=0) - AGREEMENT_MARGIN
        high = max(location.lines, default=0) + AGREEMENT_MARGIN
        symbol = location.symbol.strip().strip("`").removesuffix("()").rsplit(".", 1)[-1]
        for hunk in hunks(originals, files):
            if hunk.path != location.file:
                continue
            start, end = hunk.original_lines
            span = enclosing_function(function_spans(hunk.path, originals.get(hunk.path, "")), start)
            in_range = location.lines and start <= high and end >= low
            if in_range or (span is not None and symbol and span.name.rsplit(".", 1)[-1] == symbol):
                return (
                    f"the hypothesis named {location.file}:{location.symbol}, its own reproduction test failed "
                    "there on the unpatched code and passes with the patch"
                )
    return ""


def _reproduction(exposure: Exposure) -> str:
    """What a hypothesis' own QA test showed on the unpatched code, then the test itself: a candidate that fails
    it is told only its assertion's output, and a Patcher that cannot read what the test checks guesses."""
    shown = f"{exposure.how}\n{exposure.output}".strip() if exposure.output else exposure.how
    if exposure.qa is not None:
        shown += f"\n\nThe test ({QA_TEST_DIR}/{exposure.qa.path}):\n{exposure.qa.source.rstrip()}"
    return shown


MAX_REVIEWED_CHANGES = 20  # rows of the behaviour table the reviewer is shown


def _behaviour_table(probe: BehaviourEvidence | None) -> str:
    """The behaviour probe's inputs whose outcome the patch changed, as the reviewer reads them ("" when the
    probe replayed nothing)."""
    if probe is None or not probe.compared:
        return ""
    summary = (
        f"The edited functions ran on {probe.compared} input(s), the {probe.recorded} call(s) the tests made and "
        f"variations of them; {len(probe.changed)} changed outcome with the patch"
    )
    table = change_table(probe.changed, old="unpatched", new="patched", limit=MAX_REVIEWED_CHANGES)
    lines = [summary + (":" if table else "."), *table]
    if probe.blind:
        lines += [
            "",
            "No call a failing test made behaves differently with the patch: the fix acts through what this table "
            "cannot show (a closure, a callback, module state), so it says little of the fix itself.",
        ]
    if probe.still_raising:
        lines += [
            "",
            "Inputs from the failing tests' calls, as made or varied, that raise the same way with the patch as "
            "without it (siblings of the failing input the patch may leave out):",
            *change_table(probe.still_raising, old="unpatched", new="patched", limit=MAX_REVIEWED_CHANGES),
        ]
    if probe.second_source and probe.disagreements:
        lines += [
            "",
            f"A second solution ({probe.second_source}) passed the same checks and behaves differently on these "
            "inputs:",
            *change_table(probe.disagreements, old="this patch", new="second solution", limit=MAX_REVIEWED_CHANGES),
        ]
    elif probe.second_source:
        lines += ["", f"A second solution ({probe.second_source}) behaves the same on every input."]
    return "\n".join(lines)


def _paths_changed(winner: _Winner) -> int:
    """How many passing tests execute other lines with the winner's patch (0 when not measured)."""
    return len(winner.behaviour.changed) if winner.behaviour is not None else 0


class HealingLoop:
    def __init__(
        self,
        sandbox: Sandbox,
        engine: Engine,
        config: LoopConfig | None = None,
        *,
        trace: Trace = noop_trace,
        repo_label: str = ".",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sandbox = sandbox
        self.engine = engine
        self.config = config or LoopConfig()
        self.trace = trace
        self.repo_label = repo_label
        self.budget = Budget(self.config, clock)  # run() restarts its clock
        self.verifier = Verifier(sandbox, self.config, budget=self.budget, trace=trace)
        self.properties = PropertyChecks(self.verifier, sandbox, trace)  # the hypotheses' property tests
        self.notes: list[str] = []
        self._baseline: TestRun | None = None  # the unpatched suite with per-test coverage, once reproduced
        self._callers: dict[tuple[tuple[str, str], ...], tuple[str, ...]] = {}  # see _untested_callers
        # Failing tests the engine named as the environment's, left out of the tests to heal, and why.
        self._environment_tests: tuple[str, ...] = ()
        self._environment_problem = ""
        self._narrowings = 0
        self._reported_error = ""  # the production error being healed, as QA read it (heal_reported)

    # -- a heal from a production error ---------------------------------------------------------------
    def heal_reported(
        self, error: ReportedError, reproducer: Reproducer, test_path: str, test_imports: str = ""
    ) -> HealResult:
        """0. Reproduce a reported error (``--from-error``) by a test QA writes in ``test_path``, a new file of the
        project's tests (see ``repair.reported_error``); then heal as ``run`` does, with the tests that failed
        with that error as the failing tests and the rest of the suite as the passing tests. The patch adds the
        test file. Stops with ``ERROR_NOT_REPRODUCED`` when no frame is this checkout's source or no test QA
        wrote failed that way, with TIME_LIMIT or TEST_RUN_BUDGET, or as the engine stops (``EngineStopped``)."""
        budget = self.budget
        budget.start()
        self.trace("start", f"reproducing {error.headline()[:200]} with the {self.engine.name} engine")
        editable = set(self.sandbox.source_files())
        located = locate_frames(error, editable)
        site = raise_site(located, editable.__contains__)
        record = ReproductionRecord(
            origin=error.origin or error.source,
            headline=error.headline()[:500],
            fingerprint=error.fingerprint,
            site=site.label() if site is not None else "",
            test_path=test_path,
            reproduced=False,
        )
        if site is None:
            frames = ", ".join(f"{f.path}:{f.function}" for f in error.frames[-3:])
            detail = f"none of the reported frames is a source file of this checkout (innermost: {frames})"
            return self._unreproduced(Stop(StopReason.ERROR_NOT_REPRODUCED, detail), record)
        request = ReproductionRequest(
            error=render_error(error, located, self.sandbox.read_file),
            exc_type=error.exc_type,
            site=site,
            test_path=test_path,
            test_imports=test_imports,
        )
        attempts: list[str] = []
        reproduction: tuple[QATest, tuple[str, ...]] | None = None
        while reproduction is None and len(attempts) < MAX_ATTEMPTS:
            if (stop := budget.allows(2)) is not None:  # this test's run, and the baseline after it
                return self._unreproduced(stop, record.model_copy(update={"attempts": tuple(attempts)}))
            try:
                with budget.timed("reproduce_error"):
                    test = reproducer.reproduce_error(request, self.sandbox, attempts[-1] if attempts else "")
            except EngineStopped as stopped:
                record = record.model_copy(update={"attempts": tuple(attempts)})
                return self._unreproduced(Stop(stopped.reason, stopped.detail), record)
            if test is None:
                attempts.append("QA offered no reproduction test")
                break
            with self.sandbox.patched({test_path: test.source}):
                run = self.verifier.run([test_path])
            judgement = judge_reproduction(run, test_path, error.short_type, site, editable.__contains__)
            attempts.append(judgement.summary)
            self.trace(
                "reproduce_error",
                judgement.summary,
                attempt=len(attempts),
                reproduced=bool(judgement.reproduced),
                test_path=test_path,
                source=test.source,
            )
            if judgement.reproduced:
                reproduction = (test, judgement.reproduced)
        record = record.model_copy(update={"attempts": tuple(attempts), "reproduced": reproduction is not None})
        if reproduction is None:
            tried = f"{len(attempts)} attempt(s) by QA; the last: {attempts[-1]}" if attempts else "no attempt"
            return self._unreproduced(Stop(StopReason.ERROR_NOT_REPRODUCED, tried), record)
        test, failing = reproduction
        self._reported_error = request.error
        # The test stays in the scratch copy for the whole heal: the baseline collects it as the project's own.
        # (the sandbox adds it to every whole-suite run, whatever paths the test command names).
        with self.sandbox.patched({test_path: test.source}):
            result = self.run(failing, clock_started=True)
        return _with_reproduction(result, record, test_path, test.source)

    def _unreproduced(self, stop: Stop, record: ReproductionRecord) -> HealResult:
        result = self._finish(stop, Reproduction(TestRun()))
        return dataclasses.replace(result, report=result.report.model_copy(update={"reported_error": record}))

    # -- the loop ------------------------------------------------------------------------------------
    def run(
        self,
        junit_failing: Sequence[str | ReportedTest] = (),
        junit_passing: Sequence[str | ReportedTest] = (),
        *,
        clock_started: bool = False,
    ) -> HealResult:
        """Heal; ``junit_failing``/``junit_passing`` are a CI report's tests (node ids, or cases resolved to the
        tests collected here when the baseline runs), empty without a report. ``clock_started``: the time limit
        already counts (``heal_reported`` spent some of it reproducing the reported error)."""
        budget = self.budget
        if not clock_started:
            budget.start()
        self.trace("start", f"healing with the {self.engine.name} engine")

        # 1. Reproduce: which tests fail here, and do they fail every time?
        with budget.timed("reproduce"):
            repro = reproduce(
                self.verifier,
                junit_failing,
                junit_passing,
                trace=self.trace,
                heal_seen_failures=self.config.heal_seen_failures,
            )
        self.notes += repro.notes
        self._baseline = repro.baseline
        if repro.stop is not None:  # TIME_LIMIT, TEST_RUN_BUDGET, SANDBOX_ERROR (no re-run result), REPORT_MISMATCH
            return self._finish(repro.stop, repro)
        if not repro.f2p:
            if repro.hung:
                return self._finish(Stop(StopReason.ONLY_HUNG_TESTS), repro)
            if repro.sandbox_failures:
                return self._finish(Stop(StopReason.ONLY_SANDBOX_FAILURES), repro)
            return self._finish(
                Stop(StopReason.NOT_REPRODUCIBLE if repro.flaky else StopReason.NO_FAILING_TESTS), repro
            )

        # A test that could not reach the database or cache its CI job starts, or whose module cannot import a
        # package the project does not provide, fails for its environment: all of them, the heal stops there,
        # before any engine; some of them, they are left out (as an engine's environment diagnosis would leave them).
        if services := unreachable_services([repro.baseline.results[n] for n in repro.f2p], self.config.allow_ports):
            self.trace("environment_tests", services.detail, tests=list(services.tests), ports=list(services.ports))
            repro, stop = self._leave_out_environment(repro, services.tests, services.detail)
            if stop is not None:
                return self._finish(stop, repro)
        failures = [repro.baseline.results[n] for n in repro.f2p]
        if missing := missing_dependencies(failures, self._is_project_module):
            self.trace("environment_tests", missing.detail, tests=list(missing.tests), modules=list(missing.modules))
            repro, stop = self._leave_out_environment(repro, missing.tests, missing.detail)
            if stop is not None:
                return self._finish(stop, repro)

        # 2. Localize: rank suspicious lines and functions from coverage spectra and tracebacks.
        if (stop := budget.allows()) is not None:  # TIME_LIMIT
            return self._finish(stop, repro)
        with budget.timed("localize"):
            evidence = gather_evidence(self.sandbox, repro, user_hint=self.config.user_hint, trace=self.trace)
            if self._reported_error:  # a heal from a production error: the Detective reads it beside its test
                evidence = evidence.model_copy(update={"reported_error": self._reported_error})
        if not evidence.coverage_used and repro.baseline.coverage_note:
            self.notes.append(f"localization without coverage: {repro.baseline.coverage_note}")
        if not evidence.suspicious_lines:
            return self._finish(Stop(StopReason.NO_SUSPECTS), repro, evidence)

        # 3. Detective: ranked, distinct root-cause hypotheses.
        if (stop := budget.allows()) is not None:  # TIME_LIMIT
            return self._finish(stop, repro, evidence)
        try:
            with budget.timed("hypothesize"):
                hypotheses = self.engine.hypotheses(evidence, self.sandbox, self.config.max_hypotheses)
        except EngineStopped as stopped:  # the engine's budget, its time limit, the model, or the environment
            narrowed = self._without_environment_tests(evidence, stopped)
            if narrowed is None:
                return self._finish(Stop(stopped.reason, stopped.detail), repro, evidence)
            evidence = narrowed  # some failing tests are the environment's: the rest, asked once more
            try:
                with budget.timed("hypothesize"):
                    hypotheses = self.engine.hypotheses(evidence, self.sandbox, self.config.max_hypotheses)
            except EngineStopped as again:
                return self._finish(Stop(again.reason, again.detail), repro, evidence)
        self.trace("hypotheses", f"{len(hypotheses)} hypotheses", hypotheses=[h.model_dump() for h in hypotheses])

        records: list[HypothesisRecord] = []
        stop = Stop(StopReason.HYPOTHESES_EXHAUSTED)
        winner: _Winner | None = None
        incumbent: _Winner | None = None  # a confirmed patch the engine did not accept as the end (engine.accepts)
        seen_patches: set[str] = set()  # normalized programs already verified (see program_key)
        exposed: dict[str, Exposure] = {}  # a hypothesis walked again (environment tests left out) keeps its QA
        disputed: set[str] = set()  # hypotheses whose QA test was put in doubt once (``_dispute``)
        ahead = list(hypotheses)  # the loop's own list; the engine changes it only through revise's value
        while ahead:
            hypothesis = ahead.pop(0)
            # 4. QA: the hypothesis must be exposed by a test that fails on the unpatched code.
            try:
                with budget.timed("expose"):
                    exposure = exposed.pop(hypothesis.id, None) or self._expose(hypothesis, evidence)
            except EngineStopped as stopped:
                stop = Stop(stopped.reason, stopped.detail)
                break
            if isinstance(exposure, Stop):  # TIME_LIMIT or TEST_RUN_BUDGET: no room for a QA run and a candidate
                stop = exposure
                break
            self._trace_exposure(hypothesis, exposure)
            if not exposure.exposed:
                records.append(
                    HypothesisRecord(
                        hypothesis=hypothesis, exposed=False, exposure=exposure.how, outcome="dropped: not exposed"
                    )
                )
                continue

            # 5. Patcher + verify, with failed verifications fed back; then backtrack to the next hypothesis.
            # Once a candidate passes, a window opens: the next few candidates of the ranking are verified too
            # (LoopConfig.alternatives, within a share of the time left), so that the most plausible passing one
            # is taken, not merely the first (6.). Candidates static sanity refuses never run a test.
            qa = exposure.qa
            if qa is not None:
                # The Patcher is told what the reproduction test showed on the unpatched code.
                hypothesis = hypothesis.model_copy(update={"reproduction": _reproduction(exposure)})
                # Its claim over a class of inputs, when QA stated one: gated on the unpatched code here, run on
                # each candidate that passes everything else.
                self.properties.gate(hypothesis.id, qa.property_source)
            history: list[Verification] = []
            tried = 0
            passing: list[_Passing] = []
            qa_only: list[tuple[CandidatePatch, Verification]] = []  # failed the QA test alone
            window: _Window | None = None
            try:
                candidates = self.engine.candidates(hypothesis, evidence, self.sandbox, history)
                verified = self.verifier.verified(
                    candidates, qa, evidence, seen_patches, independent=self.engine.independent_candidates
                )
                for item in verified:
                    if isinstance(item, Stop):  # TIME_LIMIT, CANDIDATE_BUDGET or TEST_RUN_BUDGET
                        stop = item
                        break
                    candidate, verdict = item
                    if verdict.stage is VerifyStage.SANITY:  # refused untried: it cannot make sense
                        self._trace_refusal(candidate, verdict)
                        history.append(verdict)
                        continue
                    tried += 1
                    if _qa_alone(verdict):
                        qa_only.append((candidate, verdict))
                    if verdict.ok and (partial := self.properties.check(hypothesis.id, candidate)) is not None:
                        verdict = partial  # passes the tests, not the hypothesis' property: fed back as a failure
                    self._trace_verdict(candidate, verdict)
                    if window is not None:
                        window.checked += 1
                    if verdict.ok:
                        passing.append(self._passing(candidate))
                        window = window or self._open_window()
                    else:
                        history.append(verdict)
                    if window is None or not window.closed(budget.clock()):
                        continue
                    # 6. The window closed: take the most plausible passing candidate, minimize it and confirm it
                    # on the whole suite (see _settle). If every one of them breaks the suite, search on.
                    winner, settled = self._settle(passing, window, qa, evidence, history)
                    if winner is not None:
                        stop = settled  # HEALED or VERIFIED_UNCONFIRMED
                        break
                    passing, window = [], None
            except EngineStopped as stopped:
                narrowed = None if passing else self._without_environment_tests(evidence, stopped)
                if narrowed is not None:
                    # Some failing tests are the environment's: this hypothesis is walked again on the others.
                    evidence = narrowed
                    seen_patches.clear()  # verdicts against the old tests do not hold for the new ones
                    exposed[hypothesis.id] = exposure
                    ahead.insert(0, hypothesis)
                    records.append(self._record(hypothesis, exposure, tried, history, None))
                    continue
                if stopped.reason is StopReason.ENVIRONMENT and stopped.tests and not passing:
                    if not set(stopped.tests) & set(evidence.f2p_tests):
                        # It blamed tests that are not the ones to heal (passing ones): no reason to stop the
                        # heal, only this hypothesis.
                        self.notes.append(f"hypothesis {hypothesis.rank} ended: {stopped.detail}")
                        stopped = EngineStopped(StopReason.HYPOTHESES_EXHAUSTED, "")
                stop = Stop(stopped.reason, stopped.detail)
            if winner is None and passing and window is not None:
                # The candidates, the budget or the engine ended inside the window: the passing ones are settled
                # all the same (a candidate that passed verification is never thrown away).
                cut_short = "" if stop.reason is StopReason.HYPOTHESES_EXHAUSTED else stop.why
                winner, settled = self._settle(passing, window, qa, evidence, history, cut_short=cut_short)
                if winner is not None:
                    stop = settled  # HEALED or VERIFIED_UNCONFIRMED
            if (
                winner is None
                and stop.reason is StopReason.HYPOTHESES_EXHAUSTED
                and qa is not None
                and len(qa_only) >= DISPUTE_AFTER
                and hypothesis.id not in disputed
            ):
                # 5b. Candidates that pass every failing test kept failing the QA test alone: the test may be what
                # is wrong. QA reads it again once; a test it rewrites (which must still fail on the unpatched
                # code) walks the hypothesis again, its patches verified anew against it.
                disputed.add(hypothesis.id)
                rewritten: Exposure | None = None
                try:
                    rewritten = self._dispute(hypothesis, evidence, qa, qa_only)
                except EngineStopped as stopped:
                    stop = Stop(stopped.reason, stopped.detail)
                if rewritten is not None:
                    exposed[hypothesis.id] = rewritten
                    ahead.insert(0, hypothesis)
                    seen_patches.clear()  # verdicts against the old QA test do not hold for the new one
                    records.append(self._record(hypothesis, exposure, tried, history, None))
                    continue
            if winner is not None and stop.reason is StopReason.HEALED and self.config.behaviour_probe:
                # 7. Beyond the tests: a second solution, and both run on the inputs the tests passed the edited
                # functions and on variations of them (evidence for the confidence, not a stop).
                with budget.timed("scrutinize"):
                    winner = self._scrutinize(winner, hypothesis, qa, evidence)
            if winner is not None:
                winner = self._judged(winner, hypothesis, exposure, evidence)
            records.append(self._record(hypothesis, exposure, tried, history, winner))
            if (
                winner is not None
                and stop.reason is StopReason.HEALED
                and not self.engine.accepts(
                    winner.candidate.model_copy(update={"files": winner.files}), winner.confidence
                )
            ):
                # 8. Not good enough to end the heal (the cheap engine's patch below high): it is kept, and the
                # walk goes on; the better of the two ends it (_better).
                self.trace(
                    "incumbent",
                    f"{winner.candidate.id}: {winner.candidate.description}: healed at {_level(winner)} "
                    "confidence; looking on",
                    candidate=winner.candidate.id,
                    confidence=_level(winner),
                )
                incumbent, winner, stop = _better(incumbent, winner), None, Stop(StopReason.HYPOTHESES_EXHAUSTED)
            if winner is not None:
                records += [
                    HypothesisRecord(hypothesis=h, exposed=False, exposure="not needed", outcome="not reached")
                    for h in ahead
                ]
                break
            if stop.reason is not StopReason.HYPOTHESES_EXHAUSTED:
                break
            # 9. On to the next hypothesis: the engine may add some to walk next, or drop some ahead (revise).
            ahead = self.engine.revise(hypothesis, tuple(ahead)).applied(ahead)
        if incumbent is not None:
            chosen = _better(incumbent, winner)
            if chosen is incumbent:
                if winner is not None:
                    self.notes.append(
                        f"kept {incumbent.candidate.description} ({_level(incumbent)} confidence) over "
                        f"{winner.candidate.description} ({_standing(winner)})"
                    )
                stop = Stop(
                    StopReason.HEALED, stop.detail if stop.reason is not StopReason.HYPOTHESES_EXHAUSTED else ""
                )
            winner = chosen
        if winner is not None and stop.reason is StopReason.HEALED and winner.after is not None:
            # 9. Review: one look at the confirmed patch by a role that did not write it.
            winner = self._reviewed(winner, evidence)
            if winner.review is not None and winner.review.verdict != "complete" and winner.review.missed.strip():
                # 10. Broaden: the reviewer named a case the patch still gets wrong. The Patcher is asked once for
                # a patch that fixes it too; verified, confirmed, probed and reviewed like the first, it replaces
                # the first only if the reviewer then calls it complete (never a stop).
                winner = self._broadened(winner, evidence)
        return self._finish(stop, repro, evidence, records, winner)

    def _without_environment_tests(self, evidence: Evidence, stopped: EngineStopped) -> Evidence | None:
        """The evidence without the failing tests the engine named as the environment's, when it named some but
        not all of them (at most ``ENVIRONMENT_NARROWINGS`` times a heal); None when the stop stands."""
        if stopped.reason is not StopReason.ENVIRONMENT or self._narrowings >= ENVIRONMENT_NARROWINGS:
            return None
        named = set(stopped.tests) & set(evidence.f2p_tests)
        remaining = tuple(t for t in evidence.f2p_tests if t not in named)
        if stopped.tests and not named and set(stopped.tests) <= set(self._environment_tests):
            # The engine blames only tests already left out as the environment's (a service the sandbox could
            # not reach, seen before any engine ran): it agrees; the same tests are walked again, its edit first.
            self._narrowings += 1
            return evidence
        if not named or not remaining:
            return None
        self._narrowings += 1
        left_out = tuple(t for t in evidence.f2p_tests if t in named)
        self._environment_tests += left_out
        self._environment_problem = "; ".join(filter(None, (self._environment_problem, stopped.detail)))
        message = (
            f"{len(named)} failing test(s) left out as the environment's, not the code's "
            f"(first: {left_out[0]}); healing the other {len(remaining)}: {stopped.detail}"
        )
        self.notes.append(message)
        self.trace("environment_tests", message, tests=list(self._environment_tests), remaining=list(remaining))
        failures = tuple(f for f in evidence.failures if f.nodeid in remaining)
        return evidence.model_copy(update={"f2p_tests": remaining, "failures": failures})

    # -- compatibility: the verifier owns these now ----------------------------------------------------
    @property
    def test_runs(self) -> int:
        return self.budget.test_runs

    @property
    def candidates_tried(self) -> int:
        return self.budget.candidates_tried

    # -- steps ---------------------------------------------------------------------------------------
    def _expose(self, hypothesis: Hypothesis, evidence: Evidence, disputed: str = "") -> Exposure | Stop:
        """QA: the engine's reproduction test for ``hypothesis``, run on the unpatched code (no QA test: the F2P
        tests serve). Asked for only while a candidate (and then the QA run too) fits in the budget with what a
        confirmation needs kept back.

        A broken QA test (not collected, or failing in its own code) says nothing about the hypothesis: the
        engine is asked once more with the reason, and if that one is broken too, the failing tests serve as
        the reproduction. Only a QA test that runs and passes on the unpatched code drops a hypothesis.
        ``disputed``: the previous test of this hypothesis, put in doubt (``_dispute``), for the first ask."""
        cost = self.verifier.candidate_runs
        keep_seconds = self.budget.confirm_seconds
        if (stop := self.budget.allows(cost, keep_runs=CONFIRM_RUNS, keep_seconds=keep_seconds)) is not None:
            return Stop(stop.reason, f"{stop.why} reached before hypothesis {hypothesis.rank} was tried")
        feedback = ""
        exposure: Exposure | None = None
        for _attempt in (1, 2):
            qa = self.engine.qa_test(hypothesis, evidence, self.sandbox, feedback=feedback, disputed=disputed)
            disputed = ""
            if qa is None:
                break
            if (stop := self.budget.allows(1 + cost, keep_runs=CONFIRM_RUNS, keep_seconds=keep_seconds)) is not None:
                if exposure is not None:
                    break  # no room for a second QA run: the failing tests serve
                return Stop(stop.reason, f"{stop.why} reached before the QA test of hypothesis {hypothesis.rank} ran")
            exposure = self.verifier.expose(qa)
            if not exposure.broken:
                return exposure
            self._trace_exposure(hypothesis, exposure)
            feedback = f"The previous reproduction test was broken: {exposure.how}.\n{exposure.output}".strip()
        failing = f"the {len(evidence.f2p_tests)} failing test(s) reach this code and fail"
        if exposure is None:
            return Exposure(None, True, failing)
        return Exposure(None, True, f"{failing} (its QA test stayed broken: {exposure.how})")

    def _dispute(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        qa: QATest,
        qa_only: Sequence[tuple[CandidatePatch, Verification]],
    ) -> Exposure | None:
        """QA, shown its test, the first candidate that passed every failing test and failed the test alone, and
        that failure, writes the test again. A new test that exposes the hypothesis (fails on the unpatched code)
        is returned; the same test, no test, or one that does not expose: None (the dispute changes nothing)."""
        candidate, verdict = qa_only[0]
        diff = unified_diff(self.verifier.originals(candidate.files), candidate.files)
        shown = (
            f"The test ({QA_TEST_DIR}/{qa.path}):\n{qa.source.rstrip()}\n\nA candidate patch that passes every "
            f"failing test of the project:\n{diff.rstrip()}\n\nThe test's failure on it:\n{verdict.detail}"
        )
        with self.budget.timed("expose"):
            again = self._expose(hypothesis, evidence, disputed=shown)
        rewritten = isinstance(again, Exposure) and again.exposed and (again.qa is None or again.qa.source != qa.source)
        self.trace(
            "qa_disputed",
            f"{hypothesis.id}: {len(qa_only)} candidate(s) passed every failing test and failed its QA test alone; "
            + (
                "QA rewrote the test, and the hypothesis is walked again"
                if rewritten
                else "QA kept the test (or its new one does not expose the bug)"
            ),
            hypothesis=hypothesis.id,
            candidates=[c.id for c, _ in qa_only],
            rewritten=rewritten,
        )
        return again if rewritten and isinstance(again, Exposure) else None

    def _passing(self, candidate: CandidatePatch) -> _Passing:
        patterns = overfitting_patterns(self.verifier.originals(candidate.files), candidate.files)
        return _Passing(candidate, tuple(patterns))

    def _open_window(self) -> _Window:
        """After the first passing candidate. Engines whose candidates answer feedback (the LLM engines) get no
        window: each alternative would be a model call made without knowing that a candidate passed."""
        share = self.config.alternatives_time_share * max(0.0, self.budget.time_left())
        return _Window(limit=self._alternatives_wanted(), deadline=self.budget.clock() + share)

    def _alternatives_wanted(self) -> int:
        return self.config.alternatives if self.engine.independent_candidates else 0

    def _settle(
        self,
        passing: Sequence[_Passing],
        window: _Window,
        qa: QATest | None,
        evidence: Evidence,
        history: list[Verification],
        *,
        cut_short: str = "",
        minimize: bool = True,
    ) -> tuple[_Winner | None, Stop]:
        """Pick among the passing candidates: the most plausible first (fewest overfitting patterns; equals in
        the engine's order), minimized as far as the budget allows (unless ``minimize`` is false), then confirmed
        on the whole suite once with per-test coverage. What a confirmation needs was kept back; if it still cannot
        run, the patch is kept, unconfirmed. One that breaks a test outside the selected ones is a failed candidate
        (fed back in ``history``) and the next is tried; (None, ...) if every one did.

        If the confirmed one changes what some passing tests execute, up to ``BEHAVIOUR_RECHECKS`` of the next
        equally plausible candidates are confirmed too (budget allowing), and the one changing the fewest wins."""
        ranked = sorted(passing, key=lambda item: -item.plausibility)
        if len(ranked) > 1:
            self.trace(
                "choose",
                f"{len(ranked)} candidates passed; most plausible first: "
                + ", ".join(f"{p.candidate.id} ({p.plausibility:g})" for p in ranked),
                candidates=[p.candidate.id for p in ranked],
                plausibility=[p.plausibility for p in ranked],
                patterns=[[x.name for x in p.patterns] for p in ranked],
            )
        best: _Winner | None = None
        best_plausibility = 0.0
        rejected: set[str] = set()
        rechecks = 0
        for chosen in ranked:
            if best is not None:
                if (
                    _paths_changed(best) == 0
                    or rechecks >= BEHAVIOUR_RECHECKS
                    or chosen.plausibility < best_plausibility
                ):
                    break
                if self.budget.allows(self.verifier.candidate_runs + 1) is not None:
                    break
                rechecks += 1
            candidate = chosen.candidate
            minimized = Minimized(candidate.files)
            if minimize:
                with self.budget.timed("minimize"):
                    minimized = self.verifier.minimize(
                        candidate, qa, evidence, keep=self.properties.keeps(candidate.hypothesis_id)
                    )
            with self.budget.timed("confirm"):
                confirmation = self.verifier.confirm(
                    minimized.files, candidate, evidence, coverage=self.config.behaviour_coverage
                )
            if confirmation.note:
                self.notes.append(confirmation.note)
            if confirmation.rejected is not None:  # broke a test outside the selected ones
                history.append(confirmation.rejected)
                rejected.add(candidate.id)
                continue
            if not confirmation.confirmed and best is not None:
                break  # the budget is gone: keep the confirmed one
            summary = verification_summary(minimized, confirmation, qa)
            winner = _Winner(
                candidate,
                confirmation.files,
                confirmation.run,
                summary,
                alternatives_checked=window.checked,
                cut_short=cut_short,
                behaviour=self._behaviour(confirmation.files, confirmation.run, evidence),
            )
            if not confirmation.confirmed:
                others = tuple(p.candidate for p in ranked if p.candidate.id not in rejected | {candidate.id})
                winner = dataclasses.replace(winner, others=others)
                return winner, Stop(StopReason.VERIFIED_UNCONFIRMED, f"the patch is not confirmed: {summary}")
            if best is None or _paths_changed(winner) < _paths_changed(best):
                if best is not None:
                    self.trace("choose", f"{candidate.id} changes fewer passing tests' paths than {best.candidate.id}")
                best, best_plausibility = winner, chosen.plausibility
        if best is None:
            return None, Stop(StopReason.HYPOTHESES_EXHAUSTED)
        chosen_id = best.candidate.id
        others = tuple(p.candidate for p in ranked if p.candidate.id not in rejected | {chosen_id})
        return dataclasses.replace(best, others=others), Stop(StopReason.HEALED)

    def _second_solution(
        self, winner: _Winner, hypothesis: Hypothesis, qa: QATest | None, evidence: Evidence
    ) -> tuple[CandidatePatch | None, str, str]:
        """A second patch that passed verification too, where it came from, and why there is none: the engine's
        independent second solution (the LLM engines: a Patcher call that never saw the first patch), else
        another candidate that passed in the window (the offline engine's)."""
        try:
            second = self.engine.second_patch(hypothesis, evidence, self.sandbox)
        except EngineStopped as stopped:
            second = None
            why = f"no second solution: {stopped.detail or stopped.reason.value}"
        else:
            why = "" if second is not None else "the engine proposed no second solution"
        if second is None:
            if winner.others:
                return winner.others[0], "another candidate that passed verification", ""
            return None, "", why
        if self.budget.allows(self.verifier.candidate_runs) is not None:
            return None, "", "no second solution: the budget has no room to verify one"
        seen = {program_key(winner.files)}
        for item in self.verifier.verified([second], qa, evidence, seen, independent=False):
            if isinstance(item, Stop):
                return None, "", f"no second solution: {item.why}"
            candidate, verdict = item
            self._trace_verdict(candidate, verdict)
            if verdict.ok:
                return candidate, "an independent second Patcher answer", ""
            return None, "", f"the independent second solution failed verification ({verdict.stage.value})"
        return None, "", "the independent second solution is the same program as the patch"

    def _scrutinize(self, winner: _Winner, hypothesis: Hypothesis, qa: QATest | None, evidence: Evidence) -> _Winner:
        """The behaviour probe (repair/differential.py): record the calls the failing tests and the passing tests
        that run the edit make to the edited functions, replay them and variations of them on the unpatched
        code, the patch and a second solution, and keep what changed. Where the two solutions disagree, the
        engine's QA may settle it (``_settle_disagreement``): the one its test shows wrong is dropped. Costs test
        runs and, on a disagreement, a model call; never a stop."""
        second, source, why = self._second_solution(winner, hypothesis, qa, evidence)
        patches = [winner.files] + ([second.files] if second is not None else [])
        originals: dict[str, str] = {}
        for files in patches:
            originals.update(self.verifier.originals(files))
        targets = probe_targets(originals, patches)
        baseline = self._baseline.coverage if self._baseline is not None else None
        tests = probed_tests(evidence.f2p_tests, evidence.p2p_tests, baseline, targets)
        versions: dict[str, dict[str, str]] = {"patch": winner.files}
        if second is not None:
            versions["second"] = second.files
        second_diff = unified_diff(originals, second.files) if second is not None else ""
        # The attributes each version gives a class: a recorded object lacks them, and a call failing on one is
        # no outcome (differential.added_attributes).
        added = {name: added_attributes(originals, files) for name, files in versions.items()}
        run: CallProbe | None = None
        if self.budget.allows(len(versions) + 3) is not None:  # the recording, two unpatched replays, one per version
            probe = BehaviourEvidence(note="the budget had no room left for the behaviour probe")
        else:
            run = self.sandbox.probe_calls(targets, tests, versions)
            self.budget.test_runs += run.processes
            probe = behaviour_evidence(
                run,
                set(evidence.f2p_tests),
                second="second" if second is not None else "",
                second_source=source,
                second_diff=second_diff,
                added=added,
            )
        if why:
            probe = probe.model_copy(update={"note": "; ".join(filter(None, (probe.note, why)))})
        if run is not None and second is not None and probe.disagreements:
            winner, probe = self._settle_disagreement(winner, second, hypothesis, qa, evidence, run, probe, added)
        self.trace(
            "behaviour",
            f"{probe.compared} input(s) replayed: {len(probe.changed)} changed outcome with the patch "
            f"({len(probe.outside)} outside the failing tests' calls), {len(probe.disagreements)} differ from the "
            f"second solution{' (' + probe.settled + ')' if probe.settled else ''}"
            f"{' (' + probe.note + ')' if probe.note else ''}",
            compared=probe.compared,
            changed=len(probe.changed),
            outside=len(probe.outside),
            disagreements=len(probe.disagreements),
            second=probe.second_source,
            settled=probe.settled,
            note=probe.note,
        )
        return dataclasses.replace(winner, probe=probe)

    def _settle_disagreement(
        self,
        winner: _Winner,
        second: CandidatePatch,
        hypothesis: Hypothesis,
        qa: QATest | None,
        evidence: Evidence,
        run: CallProbe,
        probe: BehaviourEvidence,
        added: dict[str, frozenset[str]],
    ) -> tuple[_Winner, BehaviourEvidence]:
        """Ask the engine's QA for a test of the right outcome on the inputs where the two solutions differ, and run
        it on both: the one it passes on stays (the second one is confirmed on the whole suite first, then takes
        the first one's place, its probe evidence with it); a test that cannot run, or that both pass or both fail,
        settles nothing, and the disagreement stands."""
        rows = settling_rows(probe.disagreements)
        table = "\n".join(change_table(rows, old="first patch", new="second patch", limit=8))
        try:
            settling = self.engine.settle(hypothesis, evidence, self.sandbox, table)
        except EngineStopped as stopped:
            return winner, probe.model_copy(update={"note": f"not settled: {stopped.detail}"})
        if settling is None:
            return winner, probe
        if self.budget.allows(2) is not None:
            return winner, probe.model_copy(update={"note": "not settled: no test runs left to run the settling test"})
        path = f"{QA_TEST_DIR}/{settling.path}"
        verdicts: list[bool | None] = []
        for files in (winner.files, second.files):
            with self.sandbox.patched(files):
                result = self.verifier.run([path], extra_test_files={path: settling.source})
            outcomes = [r for n, r in result.results.items() if n.startswith(path)]
            verdicts.append(all(r.ok for r in outcomes) if outcomes else None)
        self.trace("settle", f"settling test: first patch {verdicts[0]}, second {verdicts[1]}", test=settling.source)
        first_ok, second_ok = verdicts
        if first_ok is None or second_ok is None or first_ok == second_ok:
            reason = "it could not run" if None in verdicts else ("both pass it" if first_ok else "both fail it")
            return winner, probe.model_copy(update={"note": f"the settling test settles nothing: {reason}"})
        if first_ok:
            settled = "QA's settling test passes on this patch and fails on the second solution, which was dropped"
            return winner, probe.model_copy(update={"settled": settled, "settling_test": settling.source})
        if self.budget.allows(CONFIRM_RUNS) is not None:
            note = "the settling test favours the second solution, but no test runs are left to confirm it"
            return winner, probe.model_copy(update={"note": note, "settling_test": settling.source})
        confirmation = self.verifier.confirm(second.files, second, evidence, coverage=self.config.behaviour_coverage)
        if not confirmation.confirmed or confirmation.rejected is not None:
            note = "the settling test favours the second solution, but the whole suite did not confirm it"
            return winner, probe.model_copy(update={"note": note, "settling_test": settling.source})
        replaced = _Winner(
            second,
            confirmation.files,
            confirmation.run,
            verification_summary(Minimized(second.files), confirmation, qa),
            others=(winner.candidate,),
            alternatives_checked=winner.alternatives_checked,
            behaviour=self._behaviour(confirmation.files, confirmation.run, evidence),
        )
        originals = self.verifier.originals({**winner.files, **second.files})
        swapped = behaviour_evidence(
            run,
            set(evidence.f2p_tests),
            patch="second",
            second="patch",
            second_source="the first patch, which QA's settling test showed wrong",
            second_diff=unified_diff(originals, winner.files),
            added=added,
        ).model_copy(
            update={
                "settled": "QA's settling test fails on the first patch and passes on the second solution, which "
                "replaced it (confirmed on the whole suite)",
                "settling_test": settling.source,
            }
        )
        self.notes.append(f"the second solution replaced {winner.candidate.description}: {swapped.settled}")
        return replaced, swapped

    def _behaviour(self, files: dict[str, str], after: TestRun | None, evidence: Evidence) -> BehaviourChange:
        """How the patch changed what the passing tests execute, from the baseline's and the confirmation's
        per-test coverage; not measured (and why) when either has none."""
        baseline = self._baseline
        if not self.config.behaviour_coverage:
            return BehaviourChange(False, note="coverage on the confirmation is turned off")
        if after is None:
            return BehaviourChange(False, note="the whole suite never ran on the patch")
        if baseline is None or baseline.coverage is None or after.coverage is None:
            why = (baseline.coverage_note if baseline else "") or after.coverage_note or "no coverage data"
            return BehaviourChange(False, note=f"no per-test coverage ({why})")
        originals = self.verifier.originals(files)
        return behaviour_change(baseline.coverage, after.coverage, originals, files, evidence.p2p_tests)

    def _reviewed(self, winner: _Winner, evidence: Evidence) -> _Winner:
        """The winner with the engine's review (one call) and its confidence judged again with the verdict as one
        more reason. No review (the engine has none, or it could not answer: noted) leaves it as it was: a
        review never fails a heal."""
        if winner.hypothesis is None:
            return winner
        if self.budget.time_left() <= 0:
            self.notes.append("no review: the time limit was reached before the reviewer was asked")
            return winner
        originals = self.verifier.originals(winner.files)
        request = review_request(
            failures=evidence.failures,
            hypothesis=winner.hypothesis,
            diff=unified_diff(originals, winner.files),
            originals=originals,
            files=winner.files,
            behaviour=_behaviour_table(winner.probe),
        )
        try:
            with self.budget.timed("review"):
                review = self.engine.review(request)
        except EngineStopped as stopped:
            self.notes.append(f"no review: {stopped.detail}")
            self.trace("review", f"no review: {stopped.detail}", candidate=winner.candidate.id, verdict=None)
            return winner
        if review is None:
            return winner
        confidence = self._confidence(winner, evidence, winner.agreement, winner.property_held, review)
        self.trace(
            "review",
            f"{winner.candidate.id}: {review.verdict}: {review.reason}",
            candidate=winner.candidate.id,
            verdict=review.verdict,
            reason=review.reason,
            missed=review.missed,
            confidence=confidence.level,
        )
        return dataclasses.replace(winner, review=review, confidence=confidence)

    def _judged(self, winner: _Winner, hypothesis: Hypothesis, exposure: Exposure, evidence: Evidence) -> _Winner:
        """The winner with what the confidence rule reads of it: how its hypothesis, QA test and verification
        agree, what the hypothesis' property showed of it, and the confidence they and its evidence give."""
        agreement = _agreement(hypothesis, exposure, self.verifier.originals(winner.files), winner.files)
        held = self.properties.settle(hypothesis.id, winner.files)
        return dataclasses.replace(
            winner,
            confidence=self._confidence(winner, evidence, agreement, held),
            hypothesis=hypothesis,
            agreement=agreement,
            property_held=held,
            exposure=exposure,
        )

    def _broadened(self, winner: _Winner, evidence: Evidence) -> _Winner:
        """The winner, or the Patcher's broader patch when the reviewer called the winner partial or wrong and
        calls the broader one complete. The broader patch passes what the winner passed (the failing tests, the
        QA test, the hypothesis' property, the whole suite) and goes through the same evidence steps, so its
        confidence is judged on execution as the first one's was. Every way it falls short is noted."""
        review, hypothesis, exposure = winner.review, winner.hypothesis, winner.exposure
        if review is None or hypothesis is None or exposure is None:
            return winner
        qa = exposure.qa

        def kept(why: str) -> _Winner:
            self.notes.append(f"not broadened after the reviewer's {review.verdict} verdict: {why}")
            self.trace("broaden", f"kept {winner.candidate.id}: {why}", candidate=winner.candidate.id, broadened=None)
            return winner

        if self.budget.allows(self.verifier.candidate_runs + CONFIRM_RUNS) is not None:
            return kept("no room left in the budget to verify and confirm another patch")
        diff = unified_diff(self.verifier.originals(winner.files), winner.files)
        try:
            with self.budget.timed("broaden"):
                candidate = self.engine.broaden(hypothesis, evidence, self.sandbox, diff, review)
        except EngineStopped as stopped:
            return kept(stopped.detail or stopped.reason.value)
        if candidate is None:
            return kept("the engine proposed no broader patch")
        verdict: Verification | None = None
        for item in self.verifier.verified([candidate], qa, evidence, {program_key(winner.files)}, independent=False):
            if isinstance(item, Stop):
                return kept(item.why)
            candidate, verdict = item
            if verdict.ok and (partial := self.properties.check(hypothesis.id, candidate)) is not None:
                verdict = partial
            self._trace_verdict(candidate, verdict)
        if verdict is None:
            return kept("the Patcher returned the same program")
        if not verdict.ok:
            return kept(f"the broader patch failed verification ({verdict.stage.value})")
        window = _Window(limit=0, deadline=self.budget.clock())
        # Not minimized: what it adds is for a case no test holds, so the tests alone would take it out again.
        broader, settled = self._settle([self._passing(candidate)], window, qa, evidence, [], minimize=False)
        if broader is None or settled.reason is not StopReason.HEALED:
            return kept(
                f"the broader patch was not confirmed on the whole suite{': ' + settled.why if settled.why else ''}"
            )
        if self.config.behaviour_probe:
            with self.budget.timed("scrutinize"):
                broader = self._scrutinize(broader, hypothesis, qa, evidence)
        broader = self._reviewed(self._judged(broader, hypothesis, exposure, evidence), evidence)
        if broader.review is None or broader.review.verdict != "complete":
            verdict_text = broader.review.verdict if broader.review is not None else "not given"
            return kept(f"the reviewer's verdict on the broader patch is {verdict_text}")
        self.notes.append(
            f"broadened after the reviewer called {winner.candidate.description} {review.verdict} (misses: "
            f"{review.missed}): {broader.candidate.description}"
        )
        self.trace(
            "broaden",
            f"{broader.candidate.id} replaces {winner.candidate.id}",
            candidate=winner.candidate.id,
            broadened=broader.candidate.id,
        )
        return dataclasses.replace(broader, broadened_from=review.missed)

    def _confidence(
        self,
        winner: _Winner,
        evidence: Evidence | None,
        agreement: str = "",
        property_held: str = "",
        review: Review | None = None,
    ) -> Confidence:
        """The confidence rule (plausibility.assess_confidence) over what the heal saw of the winner."""
        files = winner.files
        originals = self.verifier.originals(files)
        behaviour = winner.behaviour or BehaviourChange(False, note="not measured")
        edited_lines = {
            (h.path, line)
            for h in hunks(originals, files)
            for line in range(h.original_lines[0], h.original_lines[1] + 1)
        }
        elsewhere: list[str] = []
        same_place: list[str] = []
        for other in winner.others:
            lines = {
                (h.path, line)
                for h in hunks(originals, other.files)
                for line in range(h.original_lines[0], h.original_lines[1] + 1)
            }
            (same_place if lines & edited_lines else elsewhere).append(other.description)
        edited: list[tuple[str, str]] = []
        for hunk in hunks(originals, files):
            span = enclosing_function(function_spans(hunk.path, originals.get(hunk.path, "")), hunk.original_lines[0])
            if span is not None and (hunk.path, span.name) not in edited:
                edited.append((hunk.path, span.name))
        ranked = [(f.file, f.name) for f in evidence.suspicious_functions] if evidence else []
        return assess_confidence(
            confirmed=winner.after is not None,
            patterns=overfitting_patterns(originals, files),
            behaviour=behaviour,
            alternatives=Alternatives(
                checked=winner.alternatives_checked,
                elsewhere=tuple(elsewhere),
                same_place=tuple(same_place),
                cut_short=winner.cut_short,
                wanted=self._alternatives_wanted(),
            ),
            edited_functions=edited,
            ranked_functions=ranked,
            rejected_static=self.budget.candidates_rejected_static,
            agreement=agreement,
            environment_tests=len(self._environment_tests),
            f2p_tests=len(evidence.f2p_tests) if evidence else 0,
            probe=winner.probe,
            property_held=property_held,
            review=review,
            untested_callers=self._untested_callers(tuple(edited)),
            reproduced_from_error=bool(self._reported_error),
        )

    def _untested_callers(self, edited: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
        """``differential.untested_callers`` of the edited functions, over the project's sources and the
        baseline's coverage (none without coverage: no caller is known to be untested); once per set of edited
        functions, since a winner is assessed before and after its review."""
        baseline = self._baseline.coverage if self._baseline is not None else None
        if not baseline:
            return ()
        if edited not in self._callers:
            sources = {path: self.sandbox.read_file(path) for path in self.sandbox.source_files()}
            self._callers[edited] = untested_callers(edited, sources, baseline)
        return self._callers[edited]

    # -- bookkeeping ---------------------------------------------------------------------------------
    def _trace_refusal(self, candidate: CandidatePatch, verdict: Verification) -> None:
        self.trace(
            "sanity",
            f"{candidate.id} refused untried: {candidate.description}: {verdict.detail}",
            candidate=candidate.id,
            hypothesis=candidate.hypothesis_id,
            template=candidate.template,
            description=candidate.description,
            detail=verdict.detail,
        )

    def _trace_exposure(self, hypothesis: Hypothesis, exposure: Exposure) -> None:
        qa: QATest | None = exposure.qa
        self.trace(
            "expose",
            f"hypothesis {hypothesis.rank}: {exposure.how}",
            hypothesis=hypothesis.id,
            exposed=exposure.exposed,
            qa_path=qa.path if qa else None,
            qa_test=qa.source if qa else None,
        )

    def _trace_verdict(self, candidate: CandidatePatch, verdict: Verification) -> None:
        self.trace(
            "verify",
            # The candidate's id is its one name: the report, view.html and the PR body call it that too.
            f"{candidate.id}: {candidate.description} -> "
            f"{'PASS' if verdict.ok else 'fail at ' + verdict.stage.value} "
            f"[{self.budget.candidates_tried} tried, {self.budget.test_runs} test runs]",
            candidate=candidate.id,
            ok=verdict.ok,
            stage=verdict.stage.value,
            detail=verdict.detail,
            hypothesis=candidate.hypothesis_id,
            template=candidate.template,
            description=candidate.description,
            line=candidate.line,
            prior=candidate.prior,
            test_runs=verdict.test_runs,
        )

    def _record(
        self,
        hypothesis: Hypothesis,
        exposure: Exposure,
        tried: int,
        history: list[Verification],
        winner: _Winner | None,
    ) -> HypothesisRecord:
        by_stage: dict[str, int] = {}
        for verdict in history:
            by_stage[verdict.stage.value] = by_stage.get(verdict.stage.value, 0) + 1
        if winner is not None:
            confirmed = "" if winner.after is not None else " (not confirmed on the whole suite)"
            preferred = f", preferred to {len(winner.others)} other passing candidate(s)" if winner.others else ""
            outcome = f"healed by {winner.candidate.description}{confirmed}{preferred}"
        elif tried == 0:
            outcome = "rejected: no candidate patch to try"
        else:
            outcome = f"rejected: none of {tried} candidate(s) passed verification"
        return HypothesisRecord(
            hypothesis=hypothesis,
            exposed=True,
            exposure=exposure.how,
            candidates_tried=tried,
            outcome=outcome,
            rejections=tuple(history[:MAX_RECORDED_REJECTIONS]),
            rejections_by_stage=by_stage,
            property_test=self.properties.records.get(hypothesis.id),
        )

    def _leave_out_environment(
        self, repro: Reproduction, tests: Sequence[str], detail: str
    ) -> tuple[Reproduction, Stop | None]:
        """Leave ``tests`` out as the environment's (said in the report), or stop when no failing test remains."""
        self._environment_tests = (*self._environment_tests, *tests)
        self._environment_problem = "; ".join(filter(None, (self._environment_problem, detail)))
        remaining = tuple(n for n in repro.f2p if n not in tests)
        if not remaining:
            return repro, Stop(StopReason.ENVIRONMENT, detail)
        self.notes.append(f"{len(tests)} failing test(s) left out as the environment's: {detail}")
        return dataclasses.replace(repro, f2p=remaining), None

    def _is_project_module(self, name: str) -> bool:
        """Is ``name`` a top-level module or package of the checkout (its sources, its tests, below ``src/``)?"""
        for path in (f"{name}.py", f"{name}/__init__.py", f"src/{name}.py", f"src/{name}/__init__.py"):
            try:
                self.sandbox.read_file(path)
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            return True
        tops = {path.removeprefix("src/").split("/")[0].removesuffix(".py") for path in self.sandbox.source_files()}
        return name in tops  # a namespace package (no __init__.py)

    def _finish(
        self,
        stop: Stop,
        repro: Reproduction,
        evidence: Evidence | None = None,
        records: Sequence[HypothesisRecord] = (),
        winner: _Winner | None = None,
    ) -> HealResult:
        budget = self.budget
        budget.timings["total"] = budget.clock() - budget.started
        reason = stop.reason
        self.notes += [note for note in self.properties.notes if note not in self.notes]
        if stop.detail:
            self.notes.append(stop.detail)
        ahead = budget.candidates_checked - budget.candidates_tried
        if ahead > 0:
            self.notes.append(f"{ahead} candidate(s) after the winner were checked side by side and not needed")
        patch = None
        files = None
        originals: dict[str, str] = {}
        tests_after: dict[str, str] = {}
        confidence: Confidence | None = None
        if winner is not None:
            candidate, files = winner.candidate, winner.files
            originals = self.verifier.originals(files)
            patch = PatchRecord(
                candidate_id=candidate.id,
                hypothesis_id=candidate.hypothesis_id,
                template=candidate.template,
                description=candidate.description,
                files=tuple(sorted(files)),
                diff=unified_diff(originals, files),
                changed_lines=changed_line_count(originals, files),
                minimized_from_hunks=len(hunks(originals, candidate.files)),
                hunks=len(hunks(originals, files)),
                confirmed=winner.after is not None,
            )
            confidence = winner.confidence or self._confidence(winner, evidence)
            if winner.after is not None:
                tests_after = {n: r.status.value for n, r in winner.after.results.items()}
        report = HealReport(
            repo=self.repo_label,
            engine=self.engine.name,
            stop_reason=reason,
            explanation=STOP_EXPLANATIONS[reason],
            exit_code=int(reason.exit_code),
            f2p_tests=evidence.f2p_tests if evidence else (),
            p2p_tests=evidence.p2p_tests if evidence else (),
            flaky_tests=repro.flaky,
            hung_tests=repro.hung,
            sandbox_failures=repro.sandbox_failures,
            failures=evidence.failures if evidence else (),
            coverage_used=evidence.coverage_used if evidence else False,
            localization_note=evidence.localization_note if evidence else "",
            suspicious_lines=evidence.suspicious_lines[:20] if evidence else (),
            suspicious_functions=evidence.suspicious_functions[:10] if evidence else (),
            hypotheses=tuple(records),
            patch=patch,
            confidence=confidence,
            behaviour=winner.probe if winner is not None else None,
            review=winner.review if winner is not None else None,
            verification=winner.verification if winner is not None else "",
            tests_before=repro.tests_before,
            tests_after=tests_after,
            test_runs=budget.test_runs,
            candidates_tried=budget.candidates_tried,
            candidates_rejected_static=budget.candidates_rejected_static,
            timings={k: round(v, 3) for k, v in budget.timings.items()},
            notes=tuple(self.notes),
            environment_problem=stop.detail if reason is StopReason.ENVIRONMENT else self._environment_problem,
            environment_tests=self._environment_tests,
            junit_missing=repro.junit_missing,
            seen_failures=repro.seen_failures,
            usage=self.engine.usage(),
        )
        self.trace(
            "stop",
            f"{reason.value}: {report.explanation}",
            stop_reason=reason.value,
            test_runs=budget.test_runs,
            candidates=budget.candidates_tried,
            usage=report.usage.model_dump(mode="json"),
            confidence=confidence.level if confidence is not None else None,
            confidence_reasons=[r.code for r in confidence.reasons if r.level != "high"] if confidence else [],
        )
        return HealResult(report=report, files=files, originals=originals)


def _qa_alone(verdict: Verification) -> bool:
    """A candidate whose only failing tests are the QA test's: every failing test of the project passed."""
    failing = verdict.failing_tests
    return verdict.stage is VerifyStage.QA and bool(failing) and all(t.startswith(QA_TEST_DIR) for t in failing)


def _with_reproduction(result: HealResult, record: ReproductionRecord, test_path: str, source: str) -> HealResult:
    """The heal's outcome with the reproduction test: a patch adds it as a new file (its diff, its files), and
    the report says where the error came from."""
    report = result.report.model_copy(update={"reported_error": record})
    if result.files is None or report.patch is None:
        return dataclasses.replace(result, report=report)
    files = {**result.files, test_path: source}
    patch = report.patch.model_copy(
        update={
            "files": tuple(sorted(files)),
            "diff": unified_diff(result.originals, files),
            "changed_lines": changed_line_count(result.originals, files),
        }
    )
    return dataclasses.replace(result, files=files, report=report.model_copy(update={"patch": patch}))
