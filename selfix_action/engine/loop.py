"""The healing loop: reproduce → localize → hypothesize → expose → patch → verify → backtrack → minimize.

Read ``HealingLoop.run`` top to bottom: every way the loop can stop is a ``StopReason`` returned there.
The loop only talks to a ``Sandbox`` (runs tests on a scratch copy) and an ``Engine`` (Detective, QA,
Patcher); it never touches the user's tree and never runs code itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from selfix_action.engine.fingerprint import failure_signature
from selfix_action.engine.localize import function_spans, localize
from selfix_action.engine.models import (
    CandidateCheck,
    CandidatePatch,
    Evidence,
    Hypothesis,
    QATest,
    TestResult,
    TestRun,
    TestStatus,
    Verification,
    VerifyStage,
)
from selfix_action.engine.patches import changed_line_count, hunks, program_key, unified_diff, without_hunk
from selfix_action.engine.paths import QA_TEST_DIR, patch_violations, protected_reason
from selfix_action.engine.protocols import Engine, EngineStopped, Sandbox
from selfix_action.engine.report import (
    STOP_EXPLANATIONS,
    HealReport,
    HypothesisRecord,
    PatchRecord,
    StopReason,
)
from selfix_action.errors import SandboxError

Trace = Callable[..., None]  # trace(step, message, **data)

# A QA test must fail the way the hypothesis predicts, not because it cannot even be imported.
BROKEN_TEST_EXCEPTIONS = frozenset(
    {"ImportError", "ModuleNotFoundError", "SyntaxError", "IndentationError", "CollectionError", "NameError"}
)
MAX_RECORDED_REJECTIONS = 5
MAX_TRACED_FAILURES = 10  # failing tests written to the trace's localize event (evidence, fingerprints)


class LoopConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_hypotheses: int = 3
    max_candidates: int = 500
    max_test_runs: int = 2000
    time_limit_seconds: float = 900.0
    protected_paths: tuple[str, ...] = ()
    user_hint: str = ""
    # The naive verification path (whole suite, no early stop, for every candidate); benchmarks compare it.
    full_suite_per_candidate: bool = False
    # Adaptive wall limit for warm candidate checks: max(floor, factor x the checked tests' time on the unpatched
    # code, from the baseline run). 0 turns it off (the sandbox's own limits apply).
    candidate_limit_factor: float = 10.0
    # Only hot checks take this limit (no interpreter start, imports or collection: 15-100 ms each here), so one
    # second is still 10x and more the cost of a check; runaways (a swapped argument that makes a loop endless)
    # are cut there instead of running to the sandbox's limit.
    candidate_limit_floor_seconds: float = 1.0


@dataclass
class HealResult:
    report: HealReport
    files: dict[str, str] | None  # the verified patch as whole new file texts, None when not healed
    originals: dict[str, str] = field(default_factory=dict)


class _OutOfBudget(Exception):
    def __init__(self, reason: StopReason) -> None:
        self.reason = reason


def _noop_trace(step: str, message: str = "", **data: Any) -> None:
    return None


class HealingLoop:
    def __init__(
        self,
        sandbox: Sandbox,
        engine: Engine,
        config: LoopConfig | None = None,
        *,
        trace: Trace = _noop_trace,
        repo_label: str = ".",
    ) -> None:
        self.sandbox = sandbox
        self.engine = engine
        self.config = config or LoopConfig()
        self.trace = trace
        self.repo_label = repo_label
        self.test_runs = 0
        self.candidates_tried = 0
        self.candidates_checked = 0  # also counts those checked side by side after a winner (wasted, spare core)
        self.timings: dict[str, float] = {}
        self.notes: list[str] = []
        self._deadline = time.monotonic() + self.config.time_limit_seconds  # run() sets it again when it starts
        self._spans: dict[tuple[str, str], list] = {}  # function spans of unpatched files (see _guarding_tests)
        # Per-test seconds on the unpatched code (the baseline run): the base of the adaptive candidate limit.
        self.baseline_seconds: dict[str, float] = {}

    # -- the loop ------------------------------------------------------------------------------------
    def run(self, junit_failing: Sequence[str] = (), junit_passing: Sequence[str] = ()) -> HealResult:
        started = time.monotonic()
        self._deadline = started + self.config.time_limit_seconds
        self.trace("start", f"healing with the {self.engine.name} engine")

        # 1. Reproduce: which tests fail here, and do they fail every time?
        with self._timed("reproduce"):
            baseline, f2p_tests, p2p_tests, flaky = self._reproduce(junit_failing, junit_passing)
        tests_before = {n: r.status.value for n, r in baseline.results.items()}
        if not f2p_tests:
            reason = StopReason.NOT_REPRODUCIBLE if flaky else StopReason.NO_FAILING_TESTS
            return self._finish(reason, started, tests_before=tests_before, flaky=flaky)

        # 2. Localize: rank suspicious lines and functions from coverage spectra and tracebacks.
        with self._timed("localize"):
            evidence = self._localize(baseline, f2p_tests, p2p_tests)
        if not evidence.suspicious_lines:
            return self._finish(
                StopReason.NO_SUSPECTS, started, evidence, tests_before=tests_before, flaky=flaky
            )

        # 3. Detective: ranked, distinct root-cause hypotheses.
        try:
            with self._timed("hypothesize"):
                hypotheses = self.engine.hypotheses(evidence, self.sandbox, self.config.max_hypotheses)
        except EngineStopped as stopped:
            self.notes.append(stopped.detail)
            return self._finish(stopped.reason, started, evidence, tests_before=tests_before, flaky=flaky)
        self.trace(
            "hypotheses", f"{len(hypotheses)} hypotheses", hypotheses=[h.model_dump() for h in hypotheses]
        )

        records: list[HypothesisRecord] = []
        stop = StopReason.HYPOTHESES_EXHAUSTED
        winner: tuple[CandidatePatch, dict[str, str], TestRun] | None = None
        seen_patches: set[str] = set()  # normalized programs already verified (see program_key)
        for index, hypothesis in enumerate(hypotheses):
            # 4. QA: the hypothesis must be exposed by a test that fails on the unpatched code.
            try:
                with self._timed("expose"):
                    qa, exposed, exposure = self._expose(hypothesis, evidence)
            except EngineStopped as stopped:
                self.notes.append(stopped.detail)
                stop = stopped.reason
                break
            self.trace(
                "expose",
                f"hypothesis {hypothesis.rank}: {exposure}",
                hypothesis=hypothesis.id,
                exposed=exposed,
                qa_path=qa.path if qa else None,
                qa_test=qa.source if qa else None,
            )
            if not exposed:
                records.append(
                    HypothesisRecord(
                        hypothesis=hypothesis,
                        exposed=False,
                        exposure=exposure,
                        outcome="dropped: not exposed",
                    )
                )
                continue

            # 5. Patcher + verify, with failed verifications fed back; then backtrack to the next hypothesis.
            history: list[Verification] = []
            tried = 0
            try:
                candidates = self.engine.candidates(hypothesis, evidence, self.sandbox, history)
                for candidate, verdict in self._verified(candidates, qa, evidence, seen_patches):
                    tried += 1
                    self.trace(
                        "verify",
                        f"candidate {self.candidates_tried}: {candidate.description} -> "
                        f"{'PASS' if verdict.ok else 'fail at ' + verdict.stage.value} "
                        f"[{self.test_runs} test runs]",
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
                    if not verdict.ok:
                        history.append(verdict)
                        continue
                    # 6. Minimize, then confirm on the whole suite once.
                    with self._timed("minimize"):
                        files = self._minimize(candidate, qa, evidence)
                    with self._timed("confirm"):
                        confirmed = self._confirm(files, evidence) or (
                            self._confirm(candidate.files, evidence) if files != candidate.files else None
                        )
                    if confirmed is None:
                        history.append(
                            Verification(
                                candidate_id=candidate.id,
                                ok=False,
                                stage=VerifyStage.FULL,
                                detail="broke a test outside the selected ones on the full suite",
                            )
                        )
                        continue
                    files, after = confirmed
                    winner = (candidate, files, after)
                    break
            except _OutOfBudget as out:
                stop = out.reason
            except EngineStopped as stopped:
                self.notes.append(stopped.detail)
                stop = stopped.reason
            records.append(self._record(hypothesis, qa, exposure, tried, history, winner))
            if winner is not None:
                stop = StopReason.HEALED
                records += [
                    HypothesisRecord(
                        hypothesis=h, exposed=False, exposure="not needed", outcome="not reached"
                    )
                    for h in hypotheses[index + 1 :]
                ]
                break
            if stop is not StopReason.HYPOTHESES_EXHAUSTED:
                break
        return self._finish(stop, started, evidence, records, winner, tests_before, flaky)

    # -- steps ---------------------------------------------------------------------------------------
    def _reproduce(
        self, junit_failing: Sequence[str], junit_passing: Sequence[str]
    ) -> tuple[TestRun, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """Baseline run of the suite with coverage, and re-runs of the failing tests to weed out flakes."""
        self.trace("reproduce", "running the test suite with per-test coverage")
        baseline = self._run(None, coverage=True)
        self.baseline_seconds = {n: r.duration for n, r in baseline.results.items()}
        failing = [n for n in baseline.failing() if not n.startswith(QA_TEST_DIR)]
        if junit_failing:
            # The CI report names the failures; tests it names that pass here are re-run below like any other.
            missing = [n for n in junit_failing if n not in baseline.results]
            if missing:
                self.notes.append(f"{len(missing)} failing test(s) from the report were not found here")
            failing = [n for n in junit_failing if n in baseline.results]
        passing = [n for n in baseline.passing() if not junit_passing or n in junit_passing]
        if not failing:
            return baseline, (), tuple(passing), ()
        self.trace("reproduce", f"re-running {len(failing)} failing test(s) to check they fail every time")
        reproducible = set(failing)
        for _ in range(2 if junit_failing else 1):
            rerun = self._run(failing)
            reproducible &= set(rerun.failing())
        flaky = tuple(n for n in failing if n not in reproducible)
        if flaky:
            self.notes.append(f"{len(flaky)} failing test(s) passed on a re-run and were left out as flaky")
        return baseline, tuple(n for n in failing if n in reproducible), tuple(passing), flaky

    def _localize(self, baseline: TestRun, f2p: tuple[str, ...], p2p: tuple[str, ...]) -> Evidence:
        sources = {path: self.sandbox.read_file(path) for path in self.sandbox.source_files()}
        failures = tuple(baseline.results[n] for n in f2p)
        test_files = {n.split("::")[0] for n in f2p}
        test_sources = {}
        for path in test_files:
            try:
                test_sources[path] = self.sandbox.read_file(path)
            except OSError:
                continue
        found = localize(failures, p2p, baseline.coverage, sources, test_sources)
        note = found.note
        if not found.coverage_used and baseline.coverage_note:
            note = f"{note} ({baseline.coverage_note})"
            self.notes.append(f"localization without coverage: {baseline.coverage_note}")
        covering: dict[str, dict[int, set[str]]] = {}
        for test in p2p:
            for path, lines in (baseline.coverage or {}).get(test, {}).items():
                for line in lines:
                    covering.setdefault(path, {}).setdefault(line, set()).add(test)
        top = ", ".join(f"{s.file}:{s.line} ({s.score:.2f})" for s in found.lines[:5])
        signatures = [failure_signature(f) for f in failures[:MAX_TRACED_FAILURES]]
        self.trace(
            "localize",
            f"{note}; top lines: {top}",
            lines=[s.model_dump() for s in found.lines[:30]],
            failures=[_traced_failure(f) for f in failures[:MAX_TRACED_FAILURES]],
            signatures=[s.model_dump() for s in signatures],
            fingerprint=signatures[0].fingerprint if signatures else "",
        )
        return Evidence(
            f2p_tests=f2p,
            p2p_tests=p2p,
            failures=failures,
            suspicious_lines=found.lines,
            suspicious_functions=found.functions,
            coverage_used=found.coverage_used,
            localization_note=note,
            user_hint=self.config.user_hint,
            covering_tests={
                p: {ln: tuple(sorted(t)) for ln, t in lines.items()} for p, lines in covering.items()
            },
        )

    def _expose(self, hypothesis: Hypothesis, evidence: Evidence) -> tuple[QATest | None, bool, str]:
        qa = self.engine.qa_test(hypothesis, evidence, self.sandbox)
        if qa is None:
            return None, True, f"the {len(evidence.f2p_tests)} failing test(s) reach this code and fail"
        qa_path = f"{QA_TEST_DIR}/{qa.path}"
        run = self._run([qa_path], extra_test_files={qa_path: qa.source})
        results = [r for n, r in run.results.items() if n.startswith(qa_path)]
        if not results:
            return qa, False, "the QA test could not be collected"
        failed = [
            r for r in results if r.status is TestStatus.FAILED and r.exc_type not in BROKEN_TEST_EXCEPTIONS
        ]
        if failed:
            return qa, True, f"QA test fails on the unpatched code with {failed[0].exc_type}"
        if any(r.status is not TestStatus.PASSED for r in results):
            kinds = ", ".join(sorted({f"{r.status.value} {r.exc_type}".strip() for r in results}))
            return qa, False, f"QA test fails for the wrong reason ({kinds})"
        return qa, False, "QA test passes on the unpatched code, so it does not expose the bug"

    def _verified(
        self, candidates: Iterable[CandidatePatch], qa: QATest | None, evidence: Evidence, seen: set[str]
    ) -> Iterator[tuple[CandidatePatch, Verification]]:
        """The engine's candidates with their verdicts, in the engine's order.

        A program already verified (formatting aside) is skipped, and the budget is checked before each
        candidate. When the engine's candidates do not depend on feedback, up to ``sandbox.parallel_checks`` of
        them are verified side by side (what follows a winner in its batch is work a spare core did for nothing);
        otherwise one at a time, so that each verdict is in ``history`` before the engine makes its next one.
        """
        side_by_side = self.engine.independent_candidates and qa is None and not self.config.full_suite_per_candidate
        width = max(1, self.sandbox.parallel_checks) if side_by_side else 1
        pending = iter(candidates)
        while True:
            batch: list[CandidatePatch] = []
            stop: _OutOfBudget | None = None
            exhausted = True
            for candidate in pending:
                key = program_key(candidate.files, candidate.normalized)
                if key in seen:
                    continue  # the same program again: its verdict is known
                try:
                    self._check_budget(taken=len(batch))
                except _OutOfBudget as out:
                    stop = out  # verify what was already taken, then stop
                    break
                seen.add(key)
                batch.append(candidate)
                if len(batch) >= width:
                    exhausted = False
                    break
            if batch:
                with self._timed("verify"):
                    verdicts = self._verify_many(batch, qa, evidence)
                self.candidates_checked += len(batch)
                for candidate, verdict in zip(batch, verdicts, strict=True):
                    self.candidates_tried += 1  # counted as the loop takes it: not the ones after a winner
                    yield candidate, verdict
            if stop is not None:
                raise stop
            if exhausted:
                return

    def _verify(self, candidate: CandidatePatch, qa: QATest | None, evidence: Evidence) -> Verification:
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
            broken = _not_passing(run, targets)
            if broken:
                stage = VerifyStage.QA if broken[0].startswith(QA_TEST_DIR) else VerifyStage.F2P
                verdicts[index] = _verdict(pending[index], stage, broken, _describe(run, broken[0]), 1)
            elif guards := self._guarding_tests(pending[index].files, evidence):  # reads the unpatched files
                guarded[index] = guards
            else:
                detail = "F2P pass, 0 guarding P2P pass"
                verdicts[index] = _verdict(pending[index], VerifyStage.OK, detail=detail, runs=1)
        second = self._check({index: (pending[index].files, tests) for index, tests in guarded.items()}, {})
        for index, run in second.items():
            broken = _not_passing(run, guarded[index])
            if broken:
                verdicts[index] = _verdict(pending[index], VerifyStage.P2P, broken, _describe(run, broken[0]), 2)
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
            run = self._run(None, extra_test_files=qa_files)
        broken = _not_passing(run, targets)
        if broken:
            stage = VerifyStage.P2P if broken[0] in evidence.p2p_tests else VerifyStage.F2P
            return _verdict(candidate, stage, broken, _describe(run, broken[0]), 1)
        return _verdict(candidate, VerifyStage.OK, detail="whole suite passes", runs=1)

    def _check(
        self, jobs: Mapping[int, tuple[Mapping[str, str], Sequence[str]]], qa_files: Mapping[str, str]
    ) -> dict[int, TestRun]:
        """Each job's tests on its candidate's files, stopping at the first failure, under the adaptive limit:
        side by side through the sandbox when there are several, else one warm run."""
        if len(jobs) == 1 or qa_files:
            runs = {}
            for index, (files, tests) in jobs.items():
                with self.sandbox.patched(files):
                    runs[index] = self._run(
                        tests,
                        stop_first=True,
                        extra_test_files=qa_files,
                        warm=True,
                        wall_seconds=self._candidate_wall(tests),
                    )
            return runs
        if not jobs:
            return {}
        if self.test_runs + len(jobs) > self.config.max_test_runs:
            raise _OutOfBudget(StopReason.TEST_RUN_BUDGET)
        self.test_runs += len(jobs)
        checks = [
            CandidateCheck(files=dict(files), nodeids=tuple(tests), wall_seconds=self._candidate_wall(tests))
            for files, tests in jobs.values()
        ]
        return dict(zip(jobs, self.sandbox.check_candidates(checks), strict=True))

    def _candidate_wall(self, tests: Sequence[str]) -> float | None:
        """The adaptive wall limit for a candidate check of ``tests``, or None (the sandbox's limits).

        ``factor`` x the seconds those tests took on the unpatched code in the baseline run, at least the floor.
        The baseline ran under coverage tracing (slower than a check), so the real margin is larger than
        ``factor``; the floor absorbs fork, fixture and scheduling noise. A test without a baseline time (a QA
        test) or a baseline without any times (no durations recorded) leaves the sandbox's limit in place.
        """
        factor = self.config.candidate_limit_factor
        if factor <= 0 or not self.baseline_seconds or any(t not in self.baseline_seconds for t in tests):
            return None
        spent = sum(self.baseline_seconds[t] for t in tests)
        return max(self.config.candidate_limit_floor_seconds, factor * spent)

    def _originals(self, files: Mapping[str, str]) -> dict[str, str]:
        """The unpatched text of each file the patch touches; a file the patch creates has none."""
        originals = {}
        for path in files:
            try:
                originals[path] = self.sandbox.read_file(path)
            except (OSError, SandboxError, ValueError):
                continue
        return originals

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
        originals = self._originals(files)
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

    def _minimize(self, candidate: CandidatePatch, qa: QATest | None, evidence: Evidence) -> dict[str, str]:
        """Drop every hunk whose removal keeps all the selected tests green."""
        files = dict(candidate.files)
        originals = self._originals(files)
        changed = True
        while changed and len(hunks(originals, files)) > 1:
            changed = False
            for hunk in hunks(originals, files):
                reduced = without_hunk(originals, files, hunk)
                if not reduced:
                    continue
                trial = candidate.model_copy(update={"files": reduced, "id": candidate.id + "-min"})
                if self._verify(trial, qa, evidence).ok:
                    self.trace("minimize", f"dropped a hunk in {hunk.path} at line {hunk.original_lines[0]}")
                    files = reduced
                    changed = True
                    break
        return files

    def _confirm(self, files: dict[str, str], evidence: Evidence) -> tuple[dict[str, str], TestRun] | None:
        """The whole suite once on the patched copy: every F2P passes and no P2P regresses."""
        self.trace("confirm", "running the whole suite on the patched copy")
        with self.sandbox.patched(files):
            run = self._run(None)
        if _not_passing(run, [*evidence.f2p_tests, *evidence.p2p_tests]):
            return None
        return files, run

    # -- bookkeeping ---------------------------------------------------------------------------------
    def _run(
        self,
        nodeids: Sequence[str] | None,
        *,
        stop_first: bool = False,
        coverage: bool = False,
        extra_test_files: Mapping[str, str] | None = None,
        warm: bool = False,
        wall_seconds: float | None = None,
    ) -> TestRun:
        if self.test_runs >= self.config.max_test_runs:
            raise _OutOfBudget(StopReason.TEST_RUN_BUDGET)
        self.test_runs += 1
        try:
            return self.sandbox.run_tests(
                nodeids,
                stop_first=stop_first,
                coverage=coverage,
                extra_test_files=extra_test_files,
                warm=warm,
                **({"wall_seconds": wall_seconds} if wall_seconds is not None else {}),
            )
        except SandboxError as exc:
            if self.test_runs == 1:
                raise  # the unpatched suite cannot run at all: bad input, not a failed candidate
            # A patch that crashes pytest itself is a failed candidate; the loop goes on.
            return TestRun(output_tail=str(exc))

    def _check_budget(self, taken: int = 0) -> None:
        """Stop when time is up or ``taken`` more candidates (already pulled, not yet tried) would reach a cap."""
        if time.monotonic() > self._deadline:
            raise _OutOfBudget(StopReason.TIME_LIMIT)
        if self.candidates_tried + taken >= self.config.max_candidates:
            raise _OutOfBudget(StopReason.CANDIDATE_BUDGET)
        if self.test_runs >= self.config.max_test_runs:
            raise _OutOfBudget(StopReason.TEST_RUN_BUDGET)

    def _timed(self, step: str) -> _Timer:
        return _Timer(self.timings, step)

    def _record(
        self,
        hypothesis: Hypothesis,
        qa: QATest | None,
        exposure: str,
        tried: int,
        history: list[Verification],
        winner: tuple[CandidatePatch, dict[str, str], TestRun] | None,
    ) -> HypothesisRecord:
        by_stage: dict[str, int] = {}
        for verdict in history:
            by_stage[verdict.stage.value] = by_stage.get(verdict.stage.value, 0) + 1
        if winner is not None:
            outcome = f"healed by {winner[0].description}"
        elif tried == 0:
            outcome = "rejected: no candidate patch to try"
        else:
            outcome = f"rejected: none of {tried} candidate(s) passed verification"
        return HypothesisRecord(
            hypothesis=hypothesis,
            exposed=True,
            exposure=exposure,
            candidates_tried=tried,
            outcome=outcome,
            rejections=tuple(history[:MAX_RECORDED_REJECTIONS]),
            rejections_by_stage=by_stage,
        )

    def _finish(
        self,
        reason: StopReason,
        started: float,
        evidence: Evidence | None = None,
        records: Sequence[HypothesisRecord] = (),
        winner: tuple[CandidatePatch, dict[str, str], TestRun] | None = None,
        tests_before: dict[str, str] | None = None,
        flaky: Sequence[str] = (),
    ) -> HealResult:
        self.timings["total"] = time.monotonic() - started
        ahead = self.candidates_checked - self.candidates_tried
        if ahead > 0:
            self.notes.append(f"{ahead} candidate(s) after the winner were checked side by side and not needed")
        patch = None
        files = None
        originals: dict[str, str] = {}
        tests_after: dict[str, str] = {}
        if winner is not None:
            candidate, files, after = winner
            originals = self._originals(files)
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
            )
            tests_after = {n: r.status.value for n, r in after.results.items()}
        report = HealReport(
            repo=self.repo_label,
            engine=self.engine.name,
            stop_reason=reason,
            explanation=STOP_EXPLANATIONS[reason],
            exit_code=int(reason.exit_code),
            f2p_tests=evidence.f2p_tests if evidence else (),
            p2p_tests=evidence.p2p_tests if evidence else (),
            flaky_tests=tuple(flaky),
            failures=evidence.failures if evidence else (),
            coverage_used=evidence.coverage_used if evidence else False,
            localization_note=evidence.localization_note if evidence else "",
            suspicious_lines=evidence.suspicious_lines[:20] if evidence else (),
            suspicious_functions=evidence.suspicious_functions[:10] if evidence else (),
            hypotheses=tuple(records),
            patch=patch,
            tests_before=tests_before or {},
            tests_after=tests_after,
            test_runs=self.test_runs,
            candidates_tried=self.candidates_tried,
            timings={k: round(v, 3) for k, v in self.timings.items()},
            notes=tuple(self.notes),
            usage=self.engine.usage(),
        )
        self.trace(
            "stop",
            f"{reason.value}: {report.explanation}",
            stop_reason=reason.value,
            test_runs=self.test_runs,
            candidates=self.candidates_tried,
            usage=report.usage,
        )
        return HealResult(report=report, files=files, originals=originals)


class _Timer:
    def __init__(self, timings: dict[str, float], step: str) -> None:
        self.timings = timings
        self.step = step

    def __enter__(self) -> None:
        self.started = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        self.timings[self.step] = self.timings.get(self.step, 0.0) + time.monotonic() - self.started


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


def _not_passing(run: TestRun, nodeids: Sequence[str]) -> list[str]:
    """Requested tests that did not pass (a QA file path stands for every test in it)."""
    broken = []
    for nodeid in nodeids:
        if nodeid.startswith(QA_TEST_DIR):
            matched = [r for n, r in run.results.items() if n.startswith(nodeid)]
            if not matched or any(r.status is not TestStatus.PASSED for r in matched):
                broken.append(nodeid)
        else:
            result = run.results.get(nodeid)
            if result is None or result.status is not TestStatus.PASSED:
                broken.append(nodeid)
    return broken


def _describe(run: TestRun, nodeid: str) -> str:
    """The pruned failure fed back to the engine: the test, the exception and its message."""
    result: TestResult | None = run.results.get(nodeid)
    if result is None:
        matched = [r for n, r in run.results.items() if n.startswith(nodeid) and not r.ok]
        result = matched[0] if matched else None
    if result is None:
        return f"{nodeid}: did not run" + (" (timed out)" if run.timed_out else "")
    message = result.message.strip().splitlines()[0][:200] if result.message.strip() else ""
    return f"{nodeid}: {result.status.value} {result.exc_type} {message}".strip()


def _traced_failure(result: TestResult) -> dict[str, Any]:
    """A failing test for the trace, its message clipped so one huge assertion does not bloat it."""
    data = result.model_dump()
    data["message"] = result.message[:2000]
    return data
