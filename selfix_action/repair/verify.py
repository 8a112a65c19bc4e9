"""Verification: every test run of a heal, counted against its budget, and the verdicts made from them.

``Budget`` holds what a heal may still spend (test runs, candidates, time, on an injectable clock) and answers
"may this step start?" with ``None`` or a ``Stop`` value: steps never raise to stop the loop. ``Verifier`` makes
the runs: the baseline, counted runs, QA exposure, candidate verdicts (F2P first with stop at the first failure,
then the P2P tests guarding the edit; several candidates side by side when the engine allows), minimization and
the whole-suite confirmation.

Budget rules, so that a verified candidate is never thrown away:

- Confirmation is paid for in advance. A candidate is taken, a QA test run or a minimization trial made, only
  if its runs fit with ``CONFIRM_RUNS`` test runs kept back and more time is left than ``confirm_seconds`` (as
  long as the baseline run of the whole suite took). A run admitted that way is counted, never refused.
- Minimization is optional polish: when the budget does not allow another trial it stops, and the patch as
  minimized so far (every version of it verified) goes on to confirmation.
- Confirmation runs while the deadline has not passed and the test-run cap allows. If it cannot run, the
  candidate is still the result, marked unconfirmed: the loop stops with ``VERIFIED_UNCONFIRMED`` (exit 1, the
  patch written but never published as a fix), and ``verification_summary`` says what was checked and why the
  whole suite was not. A heal exits 0 only when the whole suite passed on the patch.

The deadline is checked between steps; a step that has started (one pytest run) is not cut by it, only by the
sandbox's own limits.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypedDict

from selfix_action.errors import SandboxError
from selfix_action.repair.config import LoopConfig
from selfix_action.repair.localize import FunctionSpan, function_spans
from selfix_action.repair.patches import hunks, program_key, without_hunk
from selfix_action.repair.paths import (
    QA_TEST_DIR,
    is_code_path,
    is_test_path,
    patch_violations,
    protected_reason,
)
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import StopReason
from selfix_action.repair.sanity import SanityChecker
from selfix_action.repair.values import (
    CandidateCheck,
    CandidatePatch,
    Evidence,
    QATest,
    TestResult,
    TestRun,
    TestStatus,
    Verification,
    VerifyStage,
)

Trace = Callable[..., None]  # trace(step, message, **data)

CANDIDATE_RUNS = 2  # at most, per candidate: F2P (and the QA test), then the guarding P2P tests
CONFIRM_RUNS = 2  # kept back for confirmation: the minimized patch, then the candidate as verified if that breaks
# A QA test must fail the way the hypothesis predicts, not because it cannot even be imported.
BROKEN_TEST_EXCEPTIONS = frozenset(
    # ReferenceError: JavaScript's NameError (a name the test never bound)
    {"ImportError", "ModuleNotFoundError", "SyntaxError", "IndentationError", "CollectionError", "NameError"}
    | {"ReferenceError"}
)
_SHORT = {
    StopReason.TIME_LIMIT: "time limit",
    StopReason.TEST_RUN_BUDGET: "test-run budget",
    StopReason.CANDIDATE_BUDGET: "candidate budget",
}


class _RunOptions(TypedDict, total=False):
    """The run options passed to the sandbox only when asked for (else the sandbox's defaults hold)."""

    coverage: bool
    wall_seconds: float


def noop_trace(step: str, message: str = "", **data: Any) -> None:
    return None


@dataclass(frozen=True)
class Stop:
    """Why a step cannot go on; the loop stops with ``reason`` (``detail`` goes into the report's notes)."""

    reason: StopReason
    detail: str = ""

    @property
    def why(self) -> str:
        """A few words for the report: "time limit", "test-run budget"..."""
        return _SHORT.get(self.reason, self.reason.value.replace("_", " "))


class Budget:
    """What one heal may still spend: test runs, candidates and time, against ``LoopConfig``'s caps."""

    def __init__(self, config: LoopConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self.test_runs = 0
        self.candidates_tried = 0  # verdicts the loop took, in order
        self.candidates_checked = 0  # also those checked side by side after a winner (a spare core's work)
        self.candidates_rejected_static = 0  # refused by static sanity: no test run, not in candidates_tried
        self.confirm_seconds = 0.0  # kept back for the confirmation: what the baseline run took
        self.timings: dict[str, float] = {}
        self.started = clock()
        self.deadline = self.started + config.time_limit_seconds

    def start(self) -> None:
        """The time limit counts from now."""
        self.started = self.clock()
        self.deadline = self.started + self.config.time_limit_seconds

    def time_left(self) -> float:
        return self.deadline - self.clock()

    def allows(self, runs: int = 0, *, keep_runs: int = 0, keep_seconds: float = 0.0) -> Stop | None:
        """None when more than ``keep_seconds`` are left before the deadline and ``runs`` more test runs fit
        under the cap with ``keep_runs`` kept back; else the stop."""
        if self.time_left() <= keep_seconds:
            return Stop(StopReason.TIME_LIMIT)
        if self.test_runs + runs + keep_runs > self.config.max_test_runs:
            return Stop(StopReason.TEST_RUN_BUDGET)
        return None

    def may_take(self, taken: int, cost: int) -> Stop | None:
        """May the loop take one more candidate (``taken`` already pulled, not yet verified, ``cost`` test runs
        each at most), keeping back what a confirmation needs?"""
        if self.time_left() <= self.confirm_seconds:
            return Stop(StopReason.TIME_LIMIT)
        if self.candidates_tried + taken >= self.config.max_candidates:
            return Stop(StopReason.CANDIDATE_BUDGET)
        return self.allows((taken + 1) * cost, keep_runs=CONFIRM_RUNS, keep_seconds=self.confirm_seconds)

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        started = self.clock()
        try:
            yield
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + self.clock() - started


@dataclass(frozen=True)
class Exposure:
    """Whether a hypothesis is exposed by a test failing on the unpatched code, and how (or why not)."""

    qa: QATest | None  # None: the F2P tests serve
    exposed: bool
    how: str
    broken: bool = False  # the QA test itself is broken (not collected, or failing in its own code)
    # The QA test's error and where it was raised: what a re-ask is told when it is broken, what the Patcher is
    # told when it exposed the hypothesis.
    output: str = ""


@dataclass(frozen=True)
class Minimized:
    files: dict[str, str]  # the patch with every hunk dropped that the selected tests do not need
    cut_short: str = ""  # why minimization stopped before trying every hunk ("time limit", ...); "" if it did


@dataclass(frozen=True)
class Confirmation:
    """The whole suite on a verified patch: confirmed (``run``), broken (``rejected``) or not run (``not_run``)."""

    files: dict[str, str]  # the patch it ends with: the minimized one, or the candidate as verified
    run: TestRun | None = None  # the whole suite on ``files``; None unless confirmed
    rejected: Verification | None = None  # a test broke on the whole suite with every version: a failed candidate
    not_run: str = ""  # why the whole suite did not run on ``files`` ("time limit", "test-run budget")
    note: str = ""

    @property
    def confirmed(self) -> bool:
        return self.run is not None


def verification_summary(minimized: Minimized, confirmation: Confirmation, qa: QATest | None) -> str:
    """What the patch was checked on, for the report, e.g. "F2P and guarding P2P only; not confirmed on the
    whole suite: time limit"."""
    if confirmation.confirmed:
        text = "confirmed on the whole suite"
    else:
        checked = "F2P, the QA test and guarding P2P" if qa is not None else "F2P and guarding P2P"
        text = f"{checked} only; not confirmed on the whole suite: {confirmation.not_run}"
    if minimized.cut_short:
        text += f"; not fully minimized: {minimized.cut_short}"
    return text


class Verifier:
    """Every test run of a heal, counted in ``budget``, and the verdicts made from them."""

    def __init__(
        self,
        sandbox: Sandbox,
        config: LoopConfig | None = None,
        *,
        budget: Budget | None = None,
        trace: Trace = noop_trace,
        baseline_seconds: Mapping[str, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sandbox = sandbox
        self.config = config or LoopConfig()
        self.budget = budget or Budget(self.config, clock)
        self.trace = trace
        # Per-test seconds on the unpatched code (the baseline run): the base of the adaptive candidate limit.
        self.baseline_seconds: dict[str, float] = dict(baseline_seconds or {})
        self.baseline_overhead = 0.0
        # Tests left out of every whole-suite run: those that hung on the unpatched code (set by reproduce).
        self.left_out: frozenset[str] = frozenset()
        # Function spans of unpatched files (see _guarding_tests).
        self._spans: dict[tuple[str, str], list[FunctionSpan]] = {}
        self.sanity = SanityChecker(self._unpatched_or_none, sandbox.source_files)

    @property
    def candidate_runs(self) -> int:
        """Test runs one candidate's verification takes at most."""
        return 1 if self.config.full_suite_per_candidate else CANDIDATE_RUNS

    # -- runs ----------------------------------------------------------------------------------------
    def baseline(self) -> TestRun:
        """The whole suite with per-test coverage on the unpatched code; measures what a confirmation will cost.

        Raises SandboxError when the suite cannot run at all: bad input, not a stop of the loop. That includes a
        suite that gave no result because it did not finish (collection or an import spins or sleeps until the
        wall-clock limit kills it) or could not report (pytest's usage/internal error, interrupted collection, no
        test collected): with no result, there is no failing test to heal, and "nothing to heal" would read as
        a green suite."""
        self.budget.test_runs += 1
        started = self.budget.clock()
        with self.budget.timed("tests"):
            run = self.sandbox.run_tests(None, coverage=True, time_left=self.budget.time_left())
        if run.deadline_reached:
            finished = sum(1 for r in run.results.values() if r.status is not TestStatus.TIMEOUT)
            raise SandboxError(
                f"the test suite did not finish within the time limit ({self.config.time_limit_seconds:g} s; "
                f"{finished} test(s) had finished): the whole suite must run once on the unpatched code before "
                "anything can be healed; raise the time limit (--time-limit, the action's timeout_minutes)"
            )
        if not run.results and (run.timed_out or run.error):
            tail = "\n".join(run.output_tail.strip().splitlines()[-10:])[-1500:]
            if run.timed_out:
                why = (
                    f"the test suite did not finish within {run.duration:.0f} s (the test-run time limit) and gave "
                    "no result: collection or an import hangs"
                )
            else:
                why = f"the test suite gave no result: {run.error.strip().splitlines()[0]}"
            raise SandboxError(f"{why}{': ' + tail if tail and tail not in why else ''}")
        self.budget.confirm_seconds = max(0.0, self.budget.clock() - started)
        self.baseline_seconds = {n: r.duration for n, r in run.results.items()}
        # What the run spent outside its tests: the runner's start, loading the project (a Node library's
        # require tree, pytest's collection); every check pays it again, whatever its tests take.
        self.baseline_overhead = max(0.0, run.duration - sum(self.baseline_seconds.values()))
        return run

    def run(
        self,
        nodeids: Sequence[str] | None,
        *,
        stop_first: bool = False,
        extra_test_files: Mapping[str, str] | None = None,
        warm: bool = False,
        wall_seconds: float | None = None,
        coverage: bool = False,
    ) -> TestRun:
        """One counted test run (the step that asked for it checked the budget). A run the sandbox could not make
        at all comes back without results, ``error`` saying why: for a candidate, that is a failed candidate."""
        self.budget.test_runs += 1
        if nodeids is None and self.left_out:
            # The whole suite but the tests left out (hung on the unpatched code): each would cost a test-run
            # limit again. The suite as the baseline collected it, plus the scratch QA files.
            nodeids = [n for n in self.baseline_seconds if n not in self.left_out]
            nodeids += [path for path in extra_test_files or {} if path not in nodeids]
        options: _RunOptions = {}
        if coverage:
            options["coverage"] = True
        if wall_seconds is not None:
            options["wall_seconds"] = wall_seconds
        try:
            with self.budget.timed("tests"):  # test time, apart from model time (report timings)
                return self.sandbox.run_tests(
                    nodeids,
                    stop_first=stop_first,
                    extra_test_files=extra_test_files,
                    warm=warm,
                    time_left=self.budget.time_left(),
                    **options,
                )
        except SandboxError as exc:
            return TestRun(output_tail=str(exc), error=str(exc))

    # -- QA ------------------------------------------------------------------------------------------
    def expose(self, qa: QATest) -> Exposure:
        """Run the QA test on the unpatched code: it exposes the hypothesis if it fails for a real reason.

        Where the exception was raised decides, not only its type: a ``NameError`` raised in the project's own
        code is the bug showing itself; the same error raised in the QA module's own lines (a name it never
        imported), a collection error or a fixture error is a broken test (``Exposure.broken``)."""
        qa_path = f"{QA_TEST_DIR}/{qa.path}"
        run = self.run([qa_path], extra_test_files={qa_path: qa.source})
        results = [r for n, r in run.results.items() if n.startswith(qa_path)]
        if not results:
            tail = "\n".join(run.output_tail.strip().splitlines()[-12:])[-1500:]
            return Exposure(qa, False, "the QA test could not be collected", broken=True, output=tail)
        failed = [r for r in results if r.status is not TestStatus.PASSED]  # a skipped QA test exposes nothing
        stand_ins = [(r, why) for r in failed if (why := _incomplete_stand_in(r, qa.source))]
        if stand_ins:
            # The project called what the test's own fake object lacks: the test fails on every code, fixed or not.
            first, why = stand_ins[0]
            at = f" at {first.frames[-1].file}:{first.frames[-1].line}" if first.frames else ""
            return Exposure(
                qa,
                False,
                f"QA test fails for the wrong reason ({why})",
                broken=True,
                output=f"{first.exc_type}{at}: {first.message[:800]}\n{why}: give it what the project calls, or use "
                "the project's own objects",
            )
        real = [r for r in failed if _real_failure(r)]
        if real:
            first = real[0]
            where = f" raised in {first.frames[-1].file}" if _raised_in_project(first) else ""
            at = f" at {first.frames[-1].file}:{first.frames[-1].line}" if first.frames else ""
            return Exposure(
                qa,
                True,
                f"QA test fails on the unpatched code with {first.exc_type}{where}",
                output=f"{first.exc_type}{at}: {first.message[:800]}".strip(),
            )
        if failed:
            kinds = ", ".join(sorted({f"{r.status.value} {r.exc_type}".strip() for r in failed}))
            first = failed[0]
            where = f" at {first.frames[-1].file}:{first.frames[-1].line}" if first.frames else ""
            return Exposure(
                qa,
                False,
                f"QA test fails for the wrong reason ({kinds}, raised in the test itself)",
                broken=True,
                output=f"{first.exc_type}{where}: {first.message[:800]}",
            )
        return Exposure(qa, False, "QA test passes on the unpatched code, so it does not expose the bug")

    # -- candidates ----------------------------------------------------------------------------------
    def verified(
        self,
        candidates: Iterable[CandidatePatch],
        qa: QATest | None,
        evidence: Evidence,
        seen: set[str],
        *,
        independent: bool = True,
    ) -> Iterator[tuple[CandidatePatch, Verification] | Stop]:
        """The engine's candidates with their verdicts, in the engine's order; a ``Stop`` last if the budget
        (time, candidates, test runs, keeping back what a confirmation needs) ended it before the engine did.

        A program already verified (formatting aside) is skipped (``seen`` holds their keys). A candidate static
        sanity refuses (``repair.sanity``: it cannot make sense) comes back at once with a ``SANITY`` verdict and
        no test run, counted in ``budget.candidates_rejected_static``, not in the candidate budget. When the engine's
        candidates do not depend on feedback (``independent``), up to ``sandbox.parallel_checks`` of them are
        verified side by side (what follows a winner in its batch is work a spare core did for nothing); otherwise
        one at a time, so that each verdict is in ``history`` before the engine makes its next one.
        """
        side_by_side = independent and qa is None and not self.config.full_suite_per_candidate
        width = max(1, self.sandbox.parallel_checks) if side_by_side else 1
        pending = iter(candidates)
        while True:
            batch: list[CandidatePatch] = []
            stop: Stop | None = None
            exhausted = False
            while len(batch) < width:
                # Asked before the engine is: a candidate can cost a model call.
                stop = self.budget.may_take(len(batch), self.candidate_runs)
                if stop is not None:
                    break  # verify what was already taken, then stop
                candidate = next(pending, None)
                if candidate is None:
                    exhausted = True
                    break
                key = program_key(candidate.files, candidate.normalized)
                if key in seen:
                    continue  # the same program again: its verdict is known
                seen.add(key)
                protected = any(protected_reason(p, self.config.protected_paths) for p in candidate.files)
                if not protected and (issues := self.sanity.issues(candidate.files)):
                    self.budget.candidates_rejected_static += 1
                    detail = "; ".join(str(issue) for issue in issues[:3])
                    yield candidate, _verdict(candidate, VerifyStage.SANITY, detail=f"cannot make sense: {detail}")
                    continue
                batch.append(candidate)
            if batch:
                with self.budget.timed("verify"):
                    verdicts = self._verify_many(batch, qa, evidence)
                self.budget.candidates_checked += len(batch)
                for candidate, verdict in zip(batch, verdicts, strict=True):
                    self.budget.candidates_tried += 1  # counted as the loop takes it: not the ones after a winner
                    yield candidate, verdict
            if stop is not None:
                yield stop
                return
            if exhausted:
                return

    def verify(self, candidate: CandidatePatch, qa: QATest | None, evidence: Evidence) -> Verification:
        return self._verify_many([candidate], qa, evidence)[0]

    def _verify_many(
        self, batch: Sequence[CandidatePatch], qa: QATest | None, evidence: Evidence
    ) -> list[Verification]:
        """F2P (and the QA test) first, stopping at the first failure; then the P2P tests guarding the edit.

        Several candidates are checked side by side, stage by stage; each verdict is the one it would get alone.
        """
        verdicts: dict[int, Verification] = {}
        pending: dict[int, CandidatePatch] = {}
        for index, candidate in enumerate(batch):
            existing = self._existing_files(candidate.files)
            refused = patch_violations(candidate.files, existing, self.config.protected_paths)
            if refused:
                path, reason = refused[0]
                verdicts[index] = _verdict(candidate, VerifyStage.PROTECTED, detail=f"edits {path} ({reason})")
            else:
                pending[index] = candidate
        qa_files = {f"{QA_TEST_DIR}/{qa.path}": qa.source} if qa else {}
        if self.config.full_suite_per_candidate:
            for index, candidate in pending.items():
                verdicts[index] = self._verify_whole_suite(candidate, qa_files, evidence)
            return [verdicts[index] for index in range(len(batch))]
        targets = [*evidence.f2p_tests, *qa_files]
        first = self._check({index: (c.files, targets) for index, c in pending.items()}, qa_files)
        guarded: dict[int, list[str]] = {}
        for index, run in first.items():
            broken = not_passing(run, targets)
            if broken:
                stage = VerifyStage.QA if broken[0].startswith(QA_TEST_DIR) else VerifyStage.F2P
                verdicts[index] = _verdict(pending[index], stage, broken, describe(run, broken[0]), 1)
            elif guards := self._guarding_tests(pending[index].files, evidence):  # reads the unpatched files
                guarded[index] = guards
            else:
                detail = "F2P pass, 0 guarding P2P pass"
                verdicts[index] = _verdict(pending[index], VerifyStage.OK, detail=detail, runs=1)
        second = self._check({index: (pending[index].files, tests) for index, tests in guarded.items()}, {})
        for index, run in second.items():
            broken = not_passing(run, guarded[index])
            if broken:
                verdicts[index] = _verdict(pending[index], VerifyStage.P2P, broken, describe(run, broken[0]), 2)
            else:
                detail = f"F2P pass, {len(guarded[index])} guarding P2P pass"
                verdicts[index] = _verdict(pending[index], VerifyStage.OK, detail=detail, runs=2)
        return [verdicts[index] for index in range(len(batch))]

    def _verify_whole_suite(
        self, candidate: CandidatePatch, qa_files: Mapping[str, str], evidence: Evidence
    ) -> Verification:
        """The naive path benchmarks compare with: the whole suite, no early stop."""
        with self.sandbox.patched(candidate.files):
            targets = [*evidence.f2p_tests, *qa_files, *evidence.p2p_tests]
            run = self.run(None, extra_test_files=qa_files)
        broken = not_passing(run, targets)
        if broken:
            stage = VerifyStage.P2P if broken[0] in evidence.p2p_tests else VerifyStage.F2P
            return _verdict(candidate, stage, broken, describe(run, broken[0]), 1)
        return _verdict(candidate, VerifyStage.OK, detail="whole suite passes", runs=1)

    def _check(
        self, jobs: Mapping[int, tuple[Mapping[str, str], Sequence[str]]], qa_files: Mapping[str, str]
    ) -> dict[int, TestRun]:
        """Each job's tests on its candidate's files, stopping at the first failure, under the adaptive limit:
        side by side through the sandbox when there are several, else one warm run."""
        if len(jobs) == 1 or qa_files:
            runs = {}
            for index, (files, tests) in jobs.items():
                wall = self.candidate_wall(tests)
                with self.sandbox.patched(files):
                    runs[index] = self.run(
                        tests, stop_first=True, extra_test_files=qa_files, warm=True, wall_seconds=wall
                    )
                    if runs[index].timed_out and wall is not None:
                        # Cut by the adaptive limit, which counts the tests' own seconds and not the runner's
                        # start (a Node library loaded, a busy machine): once more under the sandbox's own limit
                        # before "did not run" rejects the candidate (a reader saw a right patch fail so).
                        runs[index] = self.run(tests, stop_first=True, extra_test_files=qa_files, warm=True)
            return runs
        if not jobs:
            return {}
        self.budget.test_runs += len(jobs)
        checks = {
            index: CandidateCheck(files=dict(files), nodeids=tuple(tests), wall_seconds=self.candidate_wall(tests))
            for index, (files, tests) in jobs.items()
        }
        with self.budget.timed("tests"):
            runs = dict(zip(checks, self.sandbox.check_candidates(list(checks.values())), strict=True))
            # cut by the adaptive limit: once more under the sandbox's own (see the single check above)
            cut = [index for index, check in checks.items() if runs[index].timed_out and check.wall_seconds]
            if cut:
                self.budget.test_runs += len(cut)
                again = [checks[index].model_copy(update={"wall_seconds": None}) for index in cut]
                runs.update(zip(cut, self.sandbox.check_candidates(again), strict=True))
            return runs

    def candidate_wall(self, tests: Sequence[str]) -> float | None:
        """The adaptive wall limit for a candidate check of ``tests``, or None (the sandbox's limits).

        ``factor`` x the seconds those tests took on the unpatched code in the baseline run, at least the floor,
        plus what the baseline run spent outside its tests (the runner's start, loading the project).
        The baseline ran under coverage tracing (slower than a check), so the real margin is larger than
        ``factor``; the floor absorbs fork, fixture and scheduling noise. A test without a baseline time (a QA
        test) or a baseline without any times (no durations recorded) leaves the sandbox's limit in place.
        """
        factor = self.config.candidate_limit_factor
        if factor <= 0 or not self.baseline_seconds or any(t not in self.baseline_seconds for t in tests):
            return None
        spent = sum(self.baseline_seconds[t] for t in tests)
        return max(self.config.candidate_limit_floor_seconds, factor * spent) + self.baseline_overhead

    def originals(self, files: Mapping[str, str]) -> dict[str, str]:
        """The unpatched text of each file the patch touches; a file the patch creates has none."""
        originals = {}
        for path in files:
            try:
                originals[path] = self.sandbox.read_file(path)
            except (OSError, SandboxError, ValueError):
                continue
        return originals

    def _unpatched_or_none(self, path: str) -> str | None:
        if protected_reason(path) is not None:
            return None  # never read a path that may point outside the copy
        try:
            return self.sandbox.read_file(path)
        except (OSError, SandboxError, ValueError):
            return None

    def _existing_files(self, files: Mapping[str, str]) -> set[str]:
        """Which of ``files`` exist in the unpatched copy, plus the project's source files when one is new
        (a new file must land in a folder that already holds source)."""
        existing: set[str] = set()
        for path in files:
            if protected_reason(path) is not None:
                continue  # refused anyway; never read a path that may point outside the copy
            try:
                self.sandbox.read_file(path)
            except (OSError, SandboxError, ValueError):
                continue
            existing.add(path)
        if len(existing) < len(files):
            existing.update(self.sandbox.source_files())
        return existing

    def _guarding_tests(self, files: Mapping[str, str], evidence: Evidence) -> list[str]:
        """P2P tests that run the functions the patch edits (all P2P when coverage is unavailable)."""
        if not evidence.coverage_used:
            return list(evidence.p2p_tests)
        originals = self.originals(files)
        guards: set[str] = set()
        for hunk in hunks(originals, files):
            original = originals.get(hunk.path, "")
            key = (hunk.path, original)
            if key not in self._spans:  # the originals never change during a run: parse each once
                self._spans[key] = function_spans(hunk.path, original)
            spans = self._spans[key]
            lo, hi = hunk.original_lines
            touched = [s for s in spans if s.start <= hi and lo <= s.end]
            lines = set(range(lo, hi + 1))
            if touched:
                inner = max(touched, key=lambda s: s.start)
                lines = set(range(inner.start, inner.end + 1))
            else:
                return list(evidence.p2p_tests)  # module-level edit: anything may depend on it
            for line in lines:
                guards.update(evidence.covering_tests.get(hunk.path, {}).get(line, ()))
        return [t for t in evidence.p2p_tests if t in guards]

    # -- a verified candidate ------------------------------------------------------------------------
    def minimize(
        self,
        candidate: CandidatePatch,
        qa: QATest | None,
        evidence: Evidence,
        keep: Callable[[Mapping[str, str]], bool] | None = None,
    ) -> Minimized:
        """Drop every hunk whose removal keeps all the selected tests green (and ``keep`` true: the hypothesis'
        property test still holding), one trial at a time while the budget allows it beyond what the
        confirmation needs; every version kept was verified."""
        files = dict(candidate.files)
        originals = self.originals(files)
        changed = True
        while changed and len(hunks(originals, files)) > 1:
            changed = False
            for hunk in hunks(originals, files):
                reduced = without_hunk(originals, files, hunk)
                if not reduced:
                    continue
                stop = self.budget.allows(
                    self.candidate_runs, keep_runs=CONFIRM_RUNS, keep_seconds=self.budget.confirm_seconds
                )
                if stop is not None:
                    self.trace("minimize", f"stopped before trying every hunk: {stop.why}")
                    return Minimized(files, cut_short=stop.why)
                trial = candidate.model_copy(update={"files": reduced, "id": candidate.id + "-min"})
                if self.verify(trial, qa, evidence).ok and (keep is None or keep(reduced)):
                    self.trace("minimize", f"dropped a hunk in {hunk.path} at line {hunk.original_lines[0]}")
                    files = reduced
                    changed = True
                    break
        return Minimized(files)

    def confirm(
        self, files: Mapping[str, str], candidate: CandidatePatch, evidence: Evidence, *, coverage: bool = False
    ) -> Confirmation:
        """The whole suite once on ``files`` (the minimized patch): every F2P passes and no P2P regresses. If it
        breaks a test and minimization changed the patch, once more on the candidate as verified. ``coverage``:
        with per-test coverage, to compare what the passing tests execute with the baseline.

        Runs only before the deadline and within the test-run cap; when it cannot, the patch comes back
        unconfirmed (``not_run`` says why), never dropped."""
        attempts = [dict(files)]
        if dict(files) != candidate.files:
            attempts.append(dict(candidate.files))
        targets = [*evidence.f2p_tests, *evidence.p2p_tests]
        note = ""
        broken: list[str] = []
        run = TestRun()
        timed_out_once = False

        def whole_suite(files: Mapping[str, str]) -> tuple[TestRun, list[str]]:
            with self.sandbox.patched(files):
                ran = self.run(None, coverage=coverage)
            return ran, not_passing(ran, targets)

        for attempt in attempts:
            stop = self.budget.allows(1)
            if stop is not None:
                self.trace("confirm", f"not run: {stop.why}")
                return Confirmation(attempt, not_run=stop.why, note=note)
            self.trace("confirm", f"running the whole suite on the copy patched with {candidate.id}")
            run, broken = whole_suite(attempt)
            if broken and run.timed_out and not _failed(run, broken) and not timed_out_once:
                if self.budget.allows(1) is None:
                    # Killed by the wall-clock limit with nothing failed: a loaded machine or a timing test as
                    # often as a hang the patch brought. Once more; killed again, the patch is kept unconfirmed,
                    # never rejected for the tests it did not finish (and never published as a fix).
                    timed_out_once = True
                    self.trace("confirm", "the whole suite was killed by the time limit with nothing failed; once more")
                    run, broken = whole_suite(attempt)
            if not broken:
                return Confirmation(attempt, run, note=note)
            failed = _failed(run, broken)
            if run.timed_out and not failed:
                why = (
                    f"the whole suite did not finish within the test-run time limit, twice ({run.duration:.0f} s; "
                    f"{self.budget.confirm_seconds:.0f} s without the patch)"
                )
                self.trace("confirm", f"not confirmed: {why}")
                return Confirmation(attempt, not_run=why, note=note)
            if len(attempts) > 1 and attempt is attempts[0]:
                note = f"the minimized patch broke {describe(run, broken[0])} on the whole suite; kept it whole"
        detail = f"broke a test outside the selected ones on the full suite: {describe(run, broken[0])}"
        rejected = _verdict(candidate, VerifyStage.FULL, broken, detail, len(attempts))
        return Confirmation(dict(files), rejected=rejected)


def _verdict(
    candidate: CandidatePatch, stage: VerifyStage, failing: Sequence[str] = (), detail: str = "", runs: int = 0
) -> Verification:
    return Verification(
        candidate_id=candidate.id,
        ok=stage is VerifyStage.OK,
        stage=stage,
        failing_tests=tuple(failing),
        detail=detail,
        test_runs=runs,
    )


def _failed(run: TestRun, broken: Sequence[str]) -> list[str]:
    """The tests of ``broken`` that ran and failed: not those the wall-clock limit killed (TIMEOUT) or never
    reached."""
    return [n for n in broken if n in run.results and run.results[n].status is not TestStatus.TIMEOUT]


def _raised_in_project(result: TestResult) -> bool:
    """The exception was raised in the project's own code: the innermost frame is a source file, not a test."""
    if not result.frames:
        return False
    innermost = result.frames[-1].file
    return not innermost.startswith(QA_TEST_DIR + "/") and is_code_path(innermost) and not is_test_path(innermost)


# An error about an object of a class: the class is the QA test's own stand-in when the test module defines it.
MISSING_ON_OBJECT = re.compile(r"'(\w+)' object has no attribute '(\w+)'|type object '(\w+)' has no attribute '(\w+)'")


def _incomplete_stand_in(result: TestResult, qa_source: str) -> str:
    """Why a QA failure is its own fake object's fault ("" if it is not): the project's code asked an object of a
    class the QA module defines itself for something that class lacks. That test fails whatever the fix."""
    match = MISSING_ON_OBJECT.search(result.message)
    if match is None or result.exc_type != "AttributeError":
        return ""
    name, attribute = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    try:
        tree = ast.parse(qa_source)
    except SyntaxError:
        return ""
    if not any(isinstance(node, ast.ClassDef) and node.name == name for node in ast.walk(tree)):
        return ""
    return f"{name}, a stand-in the QA test defines itself, has no attribute {attribute!r} the project uses"


def _real_failure(result: TestResult) -> bool:
    """A QA test failing for a real reason: an exception the project's code raised (any type), or a failed
    assertion or error of the test's own outcome check that is not a broken-test error (import, syntax, name)."""
    if _raised_in_project(result):
        return True
    return result.status is TestStatus.FAILED and result.exc_type not in BROKEN_TEST_EXCEPTIONS


def not_passing(run: TestRun, nodeids: Sequence[str]) -> list[str]:
    """Requested tests that did not pass; no result is no pass. A QA file path, or a test module's path (a
    collection error is reported under it), stands for every test in it: the module must now collect, and each
    of its tests pass."""
    broken = []
    for nodeid in nodeids:
        if nodeid.startswith(QA_TEST_DIR) or "::" not in nodeid:
            matched = [r for n, r in run.results.items() if _within(n, nodeid)]
            if not matched or any(r.status is not TestStatus.PASSED for r in matched):
                broken.append(nodeid)
        else:
            result = run.results.get(nodeid)
            if result is None or result.status is not TestStatus.PASSED:
                broken.append(nodeid)
    return broken


def _within(found: str, asked: str) -> bool:
    """``found`` is a result of the file (or QA folder) ``asked``, or its collection error."""
    if asked.startswith(QA_TEST_DIR):
        return found.startswith(asked)
    return found == asked or found.startswith(asked + "::")


def describe(run: TestRun, nodeid: str) -> str:
    """The pruned failure fed back to the engine: the test, the exception and its message."""
    result: TestResult | None = run.results.get(nodeid)
    if result is None:
        matched = [r for n, r in run.results.items() if n.startswith(nodeid) and not r.ok]
        result = matched[0] if matched else None
    if result is None:
        why = " (timed out)" if run.timed_out else f" ({run.error.splitlines()[0][:200]})" if run.error else ""
        return f"{nodeid}: did not run{why}"
    message = result.message.strip().splitlines()[0][:200] if result.message.strip() else ""
    return f"{nodeid}: {result.status.value} {result.exc_type} {message}".strip()
