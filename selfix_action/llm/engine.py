"""The LLM engine: Detective -> QA -> Patcher roles over a ``ChatModel``, implementing the loop's ``Engine``.

- Detective: from the shared context (pruned tracebacks, localization ranking, syntax-tree slices) it returns
  up to N ranked hypotheses, validated against ``DetectiveAnswer``; near-duplicates are merged.
- QA: one small pytest module per hypothesis; the loop runs it under ``_selfix_qa/`` and drops the hypothesis
  when it passes on the unpatched code or fails for the wrong reason.
- Patcher: search/replace edits turned into whole new file texts; a failed verification comes back (through
  the loop's ``history``) as feedback for up to K retries, then the generator ends and the loop backtracks.

Every answer that cannot be used (bad JSON, missing fields, unknown or protected files, search text that does
not match exactly once) gets one corrective re-ask carrying the problem, then counts as a failed attempt.
Model errors, spent budgets and a repeated identical edit stop the loop through ``EngineStopped``.
"""

from __future__ import annotations

import ast
import difflib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from selfix_action.llm.asks import AskReply, RepositoryView, ask_heading, evidence_test_files, reply_message
from selfix_action.llm.budget import Budget
from selfix_action.llm.edits import Edit, EditError, apply_edits, normalize_path
from selfix_action.llm.named import named_definitions
from selfix_action.llm.prompts import (
    SYSTEM_PROMPT,
    broaden_request,
    build_context,
    corrective_request,
    describe_failure,
    detective_request,
    frames_slice,
    locations_slice,
    node_qa_request,
    patcher_request,
    qa_environment,
    qa_file,
    qa_request,
    qa_retry,
    render_slices,
    reproducer_context,
    reproducer_request,
    reviewer_context,
    reviewer_request,
    second_patcher_request,
    settle_request,
    source_slices,
    stack_test_files,
)
from selfix_action.llm.schemas import (
    DETECTIVE_TOOL,
    MAX_ASKS_PER_ANSWER,
    PATCHER_TOOL,
    QA_TOOL,
    REVIEW_TOOL,
    AskAnswer,
    DetectiveAnswer,
    HypothesisAnswer,
    LocationAnswer,
    PatcherAnswer,
    ProjectBounds,
    QAAnswer,
    ReviewAnswer,
    tool_specs,
    validation_message,
)
from selfix_action.providers.base import (
    ChatModel,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    PreflightResult,
)
from selfix_action.repair.languages import has_node_test, is_node_file, syntax_problem
from selfix_action.repair.patches import changed_line_count, program_key
from selfix_action.repair.protocols import EngineStopped, Sandbox
from selfix_action.repair.report import Confidence, PreflightUsage, StopReason, Usage
from selfix_action.repair.reported_error import ReproductionRequest
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import (
    CandidatePatch,
    Evidence,
    Hypothesis,
    Location,
    PlanChange,
    QATest,
    Verification,
)

Trace = Callable[..., None]  # trace(step, message, **data), as the loop's
A = TypeVar("A", bound=BaseModel)
L = TypeVar("L", HypothesisAnswer, LocationAnswer)
R = TypeVar("R")

DEFAULT_OUTPUT_TOKENS = {
    "detective": 2500,
    "qa": 1500,
    "patcher": 2000,
    "patcher2": 2000,
    "broadener": 2000,
    "reviewer": 800,
    "reproducer": 1500,
}
SIMILAR = 0.6  # difflib ratio above which two hypotheses at one location are the same idea
MAX_HYPOTHESIS_LINES = 60
MAX_ASK_ROUNDS = 3  # rounds of asks one role call may make before it must answer
ASKING_ROLES: dict[str, type[DetectiveAnswer] | type[PatcherAnswer]] = {
    "detective": DetectiveAnswer,
    "patcher": PatcherAnswer,
    "patcher2": PatcherAnswer,
    "broadener": PatcherAnswer,
}


class InvalidAnswer(Exception):
    """A model answer that cannot be used; the message goes back to the model in the corrective re-ask."""

    def __init__(self, problem: str, *, partial: Any = None, repeated: bool = False, asked: bool = False) -> None:
        super().__init__(problem)
        self.partial = partial  # what was usable anyway (valid hypotheses among invalid ones)
        self.repeated = repeated  # an identical edit to one already tried
        self.asked = asked  # more asks after being told none are left


class EnvironmentDiagnosis(Exception):
    """A role's answer that no code is at fault: the environment is. It ends the heal (no patch for it)."""

    def __init__(self, role: str, problem: str, tests: Sequence[str] = ()) -> None:
        super().__init__(problem)
        self.role = role
        self.problem = problem.strip()
        self.tests = tuple(tests)


def _noop_trace(step: str, message: str = "", **data: Any) -> None:
    return None


def _unread(path: str) -> str:
    raise OSError(f"no sandbox yet to read {path}")


class LLMEngine:
    independent_candidates = False  # the Patcher's next edit answers the last failed verification

    def __init__(
        self,
        model: ChatModel,
        budget: Budget,
        *,
        hypotheses: int = 3,
        patch_retries: int = 2,
        protected_paths: Sequence[str] = (),
        trace: Trace | None = None,
        similar_fixes: Callable[[Evidence], str] | None = None,
        output_tokens: Mapping[str, int] | None = None,
        samples: int = 1,
        max_asks: int = 8,
        preflight: PreflightResult | None = None,
    ) -> None:
        self.model = model
        self.budget = budget
        self.name = f"{model.provider}:{model.model}"
        self.n_hypotheses = hypotheses
        self.patch_retries = patch_retries
        self.protected_paths = tuple(protected_paths)
        self.trace = trace or _noop_trace
        self.similar_fixes = similar_fixes  # memory hook: similar past fixes (selfix_action.learn.hooks)
        self.output_tokens = {**DEFAULT_OUTPUT_TOKENS, **(output_tokens or {})}
        # Patcher answers asked for at a hypothesis's first attempt, when the call budget has room for them
        # (Agentless-style sampling: normalized, deduplicated, the most often proposed verified first).
        self.samples = max(1, samples)
        # Asks for more context (a file's lines, a symbol, a search) the Detective and the Patcher may make in the
        # whole heal; 0: they are not offered (no ``asks`` field in the schemas, no word of them in the prompts).
        self.max_asks = max(0, max_asks)
        self.asked_files: set[str] = set()  # files whose text an ask showed (their source files join the file enums)
        self._view: RepositoryView | None = None
        self._view_evidence: Evidence | None = None
        # What the offline engine tried before this engine was called (--engine auto): the evidence it had and
        # the candidates that failed, shown to every role as negative examples (``hypotheses(prior_attempts=)``).
        self._prior_attempts = ""
        self._tools: tuple[Any, ...] | None = None  # built from the first sandbox seen (see _tools_for)
        self.preflight = preflight  # what the check before the run found (heal.engines), shown in the usage
        self._file_lines: dict[str, int] = {}  # source file shown -> its line count (the schemas' bounds)
        self._read: Callable[[str], str] = _unread
        self._yielded_programs: set[str] = set()  # repair.patches.program_key of every candidate handed out
        self._context_evidence: Evidence | None = None
        self._context = ""
        self._base_context = ""  # the context without what was tried before this engine (``_prior_attempts``)
        self._tried: dict[str, str] = {}  # program_key of a patch -> how it fared, across hypotheses
        self._last_problem = ""
        # An answer that named some failing tests as the environment's also carried what it proposes for the
        # others: handed out once the loop has left those tests out (EngineStopped with tests).
        self._stashed_hypotheses: list[HypothesisAnswer] | None = None
        self._stashed_patch: tuple[PatcherAnswer, dict[str, str]] | None = None

    # -- Engine protocol ---------------------------------------------------------------------------------
    def usage(self) -> Usage:
        usage = self.budget.usage()
        preflight = (
            PreflightUsage(models_listed=len(self.preflight.models), note=self.preflight.note)
            if self.preflight is not None
            else None
        )
        return usage.model_copy(
            update={
                "provider": self.model.provider,
                "model": self.model.model,
                "structured": getattr(self.model, "structured", "tools"),
                "limits": usage.limits.model_copy(update={"max_asks": self.max_asks}),
                "preflight": preflight,
            }
        )

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        return PlanChange()  # the Detective answers once; the Patcher's feedback goes through ``history``

    def hypotheses(
        self, evidence: Evidence, sandbox: Sandbox, limit: int, *, prior_attempts: str | None = None
    ) -> list[Hypothesis]:
        """``prior_attempts`` (--engine auto's hand-over): what was tried before this engine was called, a context
        section every role is shown from this call on."""
        if prior_attempts is not None:
            self._prior_attempts = prior_attempts
        count = max(1, min(self.n_hypotheses, limit))
        editable = set(sandbox.source_files())

        def validate(response: ModelResponse) -> list[HypothesisAnswer]:
            answer = _parse(response, DetectiveAnswer)
            if not answer.hypotheses:
                raise EnvironmentDiagnosis("detective", answer.environment_problem, answer.environment_tests)
            usable: list[HypothesisAnswer] = []
            problems: list[str] = []
            for number, item in enumerate(answer.hypotheses, 1):
                first = self._place(item, f"hypotheses.{number}", editable, problems)
                also = [
                    self._place(place, f"hypotheses.{number}.also.{n}", editable, problems)
                    for n, place in enumerate(item.also, 1)
                ]
                if first is not None and all(place is not None for place in also):
                    usable.append(first.model_copy(update={"also": also}))
            if problems:
                raise InvalidAnswer("; ".join(problems), partial=usable)
            if answer.environment_problem.strip() and answer.environment_tests:
                # Some failing tests are the environment's: the loop leaves them out, then asks again; these
                # hypotheses (about the others) are the answer then.
                self._stashed_hypotheses = usable
                raise EnvironmentDiagnosis("detective", answer.environment_problem, answer.environment_tests)
            return usable

        answers: list[HypothesisAnswer] | None
        if self._stashed_hypotheses is not None:
            answers, self._stashed_hypotheses = self._stashed_hypotheses, None
        else:
            request = detective_request(count, asks_left=self._asks_left())
            answers = self._ask("detective", DETECTIVE_TOOL, request, evidence, sandbox, validate)
        merged = merge_near_duplicates(answers or [])
        merged.sort(key=lambda h: -h.confidence)  # stable: the model's order breaks ties
        return [
            Hypothesis(
                id=f"H{rank}",
                rank=rank,
                title=item.title,
                confidence=round(item.confidence, 3),
                file=item.file,
                symbol=item.symbol,
                lines=tuple(range(item.line_start, item.line_end + 1))[:MAX_HYPOTHESIS_LINES],
                reasoning=item.reasoning,
                proposed_fix=item.proposed_fix,
                also=tuple(
                    Location(
                        file=place.file,
                        symbol=place.symbol,
                        lines=tuple(range(place.line_start, place.line_end + 1))[:MAX_HYPOTHESIS_LINES],
                    )
                    for place in item.also
                    if (place.file, place.symbol) != (item.file, item.symbol)
                ),
            )
            for rank, item in enumerate(merged[:count], 1)
        ]

    def _place(self, item: L, where: str, editable: set[str], problems: list[str]) -> L | None:
        """``item`` with its file normalized and its last line within the file, or None with the problem noted."""
        path = normalize_path(item.file)
        if path not in editable:
            close = difflib.get_close_matches(path, sorted(editable), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{where}.file: {item.file!r} is not one of the project's source files{hint}")
            return None
        length = self._file_lines.get(path)
        if length is None:
            length = _line_count(self._read, path)
        if length is not None and item.line_start > length:
            problems.append(f"{where}.line_start: {item.line_start} is past the end of {path} ({length} lines)")
            return None
        end = min(item.line_end, length) if length is not None else item.line_end
        return item.model_copy(update={"file": path, "line_end": end})

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        return True  # the last engine asked: its best patch is the answer

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        path = qa_file(evidence, f"test_qa_{hypothesis.id.lower()}")
        retry = qa_retry(feedback, disputed)
        request = (
            node_qa_request(hypothesis, path, evidence, retry)
            if evidence.toolchain
            else qa_request(hypothesis, path, retry, qa_environment(evidence, sandbox.read_file))
        )
        answer = self._ask(
            "qa",
            QA_TOOL,
            request,
            evidence,
            sandbox,
            _qa_answer_for(path),
        )
        if answer is None:
            self.trace(
                "qa_fallback",
                f"no usable QA test for {hypothesis.id}; the failing tests serve as its reproduction",
                hypothesis=hypothesis.id,
                problem=self._last_problem,
            )
            return None
        source = answer.test_source if answer.test_source.endswith("\n") else answer.test_source + "\n"
        prop = answer.property_source
        if prop.strip() and (problem := property_source_problem(prop)):
            # Optional evidence: a property test that cannot run is dropped, the reproduction still stands.
            self.trace("property_dropped", f"{hypothesis.id}: property test not used: {problem}", problem=problem)
            prop = ""
        return QATest(path=path, source=source, property_source=prop)

    def candidates(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        history: Sequence[Verification],
    ) -> Iterator[CandidatePatch]:
        editable = set(sandbox.source_files())
        places, code = patcher_code(hypothesis, sandbox)
        attempts: list[str] = []  # what was tried for this hypothesis and how it failed, fed back each time
        implicated = ""  # the code the last failed attempt's output points at, beside the places named

        def validate(response: ModelResponse, *, refuse_repeats: bool = True) -> tuple[PatcherAnswer, dict[str, str]]:
            answer = _parse(response, PatcherAnswer)
            if not answer.edits:
                raise EnvironmentDiagnosis("patcher", answer.environment_problem, answer.environment_tests)
            edits = [Edit(e.file, e.search, e.replace) for e in answer.edits]
            try:
                files = apply_edits(edits, sandbox.read_file, editable, self.protected_paths)
            except EditError as exc:
                raise InvalidAnswer(str(exc)) from exc
            if answer.environment_problem.strip() and answer.environment_tests:
                # The edit is for the other failing tests: it is tried first once the loop left these out.
                self._stashed_patch = (answer, files)
                raise EnvironmentDiagnosis("patcher", answer.environment_problem, answer.environment_tests)
            earlier = self._tried.get(program_key(files))
            if earlier is not None and refuse_repeats:
                raise InvalidAnswer(
                    f"this patch is identical to one already tried ({earlier}); propose a different fix",
                    repeated=True,
                )
            return answer, files

        number = 0
        passed = False  # a candidate of this hypothesis passed: no new model call, only the samples in hand
        for round_number in range(1, self.patch_retries + 2):
            if passed:
                return
            request = patcher_request(hypothesis, code, attempts, implicated, asks_left=self._asks_left())
            if round_number == 1 and self._stashed_patch is not None:
                proposals, self._stashed_patch = [self._stashed_patch], None
            elif round_number == 1 and self._sample_count() > 1:
                proposals = self._sampled_patches(request, evidence, sandbox, validate)
            else:
                result = self._ask("patcher", PATCHER_TOOL, request, evidence, sandbox, validate)
                proposals = [result] if result is not None else []
            if not proposals:
                attempts.append(f"unusable answer: {self._last_problem}")
                continue
            for answer, files in proposals:
                number += 1
                program = program_key(files)
                self._tried[program] = "not verified yet"
                duplicate = program in self._yielded_programs  # the verifier skips a program it has verified
                self._yielded_programs.add(program)
                before = len(history)
                yield CandidatePatch(
                    id=f"{hypothesis.id}-P{number}",
                    hypothesis_id=hypothesis.id,
                    description=answer.explanation[:200],
                    template="llm",
                    files=files,
                )
                # Resumed. A failed verdict is the last entry of ``history``; none and not a duplicate: it passed,
                # and the loop is looking at alternatives (repair.loop's window of passing candidates).
                if len(history) > before:
                    outcome = describe_failure(history[-1])
                    implicated = _implicated(history[-1], places, sandbox)
                elif duplicate:
                    outcome = "skipped as a duplicate"
                else:
                    outcome = "passed verification"
                    passed = True
                self._tried[program] = outcome
                attempts.append(f"{_summarize(answer)} -> {outcome}")

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        """An independent second solution: one fresh Patcher call (usage role "patcher2") with the same
        hypothesis and the same code, and nothing of this heal's patches: no earlier attempt, no verdict, no
        first patch, and the context without what was tried before this engine was called (--engine auto's
        offline candidates and the offline patch). No temperature or seed is sent by any call of this engine, so
        the provider samples at its default (1.0 on Anthropic and OpenAI): a fresh call is a fresh sample, not a
        replay of the first. Asked for a fix of every input the root cause reaches (``SECOND_PATCHER_FOCUS``):
        given the first's request word for word, a capable model writes the first's program again. None: no usable
        answer after the corrective re-ask."""
        self._context_of(evidence, sandbox)  # the shared context's pieces: the sandbox to read, the tools' bounds
        _, code = patcher_code(hypothesis, sandbox)
        request = second_patcher_request(hypothesis, code, asks_left=self._asks_left())
        return self._one_patch(
            "patcher2", request, hypothesis, evidence, sandbox, "S2", "llm-second", context=self._base_context
        )

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        """Patcher, once more, after the Reviewer called the confirmed patch partial or wrong (usage role
        "broadener"): the first Patcher's request with no attempt, the patch as a diff, and the reviewer's reason
        and the case it says the patch misses; asked for one whole patch from the unpatched code that fixes that
        case too. None: no usable answer after the corrective re-ask."""
        _, code = patcher_code(hypothesis, sandbox)
        request = broaden_request(hypothesis, code, diff, review, asks_left=self._asks_left())
        return self._one_patch("broadener", request, hypothesis, evidence, sandbox, "B", "llm-broadened")

    def _one_patch(
        self,
        role: str,
        request: str,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        suffix: str,
        template: str,
        *,
        context: str | None = None,
    ) -> CandidatePatch | None:
        """One Patcher answer outside the candidates' feedback loop (the second solution, the broadened patch),
        applied to the unpatched files: an answer with no edits is an environment diagnosis, an edit that does not
        apply is an invalid answer (one corrective re-ask). None: no usable answer."""
        editable = set(sandbox.source_files())

        def validate(response: ModelResponse) -> tuple[PatcherAnswer, dict[str, str]]:
            answer = _parse(response, PatcherAnswer)
            if not answer.edits:
                raise EnvironmentDiagnosis(role, answer.environment_problem, answer.environment_tests)
            edits = [Edit(e.file, e.search, e.replace) for e in answer.edits]
            try:
                return answer, apply_edits(edits, sandbox.read_file, editable, self.protected_paths)
            except EditError as exc:
                raise InvalidAnswer(str(exc)) from exc

        result = self._ask(role, PATCHER_TOOL, request, evidence, sandbox, validate, context=context)
        if result is None:
            return None
        answer, files = result
        return CandidatePatch(
            id=f"{hypothesis.id}-{suffix}",
            hypothesis_id=hypothesis.id,
            description=answer.explanation[:200],
            template=template,
            files=files,
        )

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        """QA, once more: a test of the right outcome on the inputs where two verified patches differ (usage role
        "settler"); None when no usable test came."""
        path = qa_file(evidence, f"test_settle_{hypothesis.id.lower()}")
        request = settle_request(hypothesis, path, disagreements, qa_environment(evidence), evidence)
        answer = self._ask("settler", QA_TOOL, request, evidence, sandbox, _qa_answer_for(path))
        if answer is None:
            return None
        source = answer.test_source if answer.test_source.endswith("\n") else answer.test_source + "\n"
        return QATest(path=path, source=source)

    def reproduce_error(self, request: ReproductionRequest, sandbox: Sandbox, feedback: str = "") -> QATest | None:
        """QA from a reported error (``--from-error``, usage role "reproducer"): a test module for
        ``request.test_path`` that fails with that error, in a context of its own (the error, the project's frames
        and code; there is no failing test nor localization yet). A corrective re-ask when the answer cannot be a
        test module; None when neither can. Raises ``EngineStopped`` when the budget or the model stops."""
        answer, problem = self._own_context_call(
            "reproducer",
            QA_TOOL,
            reproducer_context(request),
            reproducer_request(request, feedback),
            _qa_answer_for(request.test_path),
        )
        if answer is None:
            self._last_problem = problem
            return None
        source = answer.test_source if answer.test_source.endswith("\n") else answer.test_source + "\n"
        return QATest(path=request.test_path, source=source)

    def review(self, request: ReviewRequest) -> Review | None:
        """Reviewer: one call (a corrective re-ask if its answer cannot be used) in a context of its own, built
        from ``request`` alone: the failing tests, the edited code, the hypothesis, the patch, the behaviour
        table. Raises ``EngineStopped`` when the budget or the model cannot answer, or no answer was usable."""
        answer, problem = self._own_context_call(
            "reviewer",
            REVIEW_TOOL,
            reviewer_context(request),
            reviewer_request(request),
            lambda response: _parse(response, ReviewAnswer),
        )
        if answer is None:
            raise EngineStopped(StopReason.MODEL_ERROR, f"the reviewer gave no usable answer: {problem}")
        return Review(verdict=answer.verdict, reason=answer.reason, missed=answer.missed)

    def _own_context_call(
        self, role: str, tool: str, context: str, request: str, parse: Callable[[ModelResponse], R]
    ) -> tuple[R | None, str]:
        """One call of a role that reads a context of its own (not the shared one, no asks), with one corrective
        re-ask when its answer cannot be used: (the parsed answer or None, the last problem)."""
        messages = [Message("user", request)]
        problem = ""
        for attempt in (1, 2):
            response = self._call(role, tool, context, messages)
            try:
                return parse(response), ""
            except InvalidAnswer as bad:
                problem = str(bad)
                self.budget.invalid_answers += 1
                self.trace(
                    "model_invalid",
                    f"{role}: unusable answer ({'re-asking' if attempt == 1 else 'giving up'}): {bad}",
                    role=role,
                    attempt=attempt,
                    problem=problem,
                )
                messages += [
                    Message("assistant", response.text.strip() or "(no answer)"),
                    Message("user", corrective_request(problem)),
                ]
        return None, problem

    def _sample_count(self) -> int:
        """Patcher samples for this first attempt: ``samples`` when the call budget leaves room for them and for
        the feedback retries, else one."""
        if self.samples <= 1:
            return 1
        left = self.budget.calls_left()
        if left is not None and left < self.samples + self.patch_retries + 1:
            return 1
        return self.samples

    def _sampled_patches(
        self,
        request: str,
        evidence: Evidence,
        sandbox: Sandbox,
        validate: Callable[..., tuple[PatcherAnswer, dict[str, str]]],
    ) -> list[tuple[PatcherAnswer, dict[str, str]]]:
        """Several Patcher answers to one request, normalized (same program: one patch) and deduplicated, the
        most often proposed first, then the smallest: the order the loop verifies them in, so the first that
        passes, which the loop keeps, is the most plausible of those that pass. Patches already tried for
        another hypothesis are left out."""
        count = self._sample_count()
        groups: dict[str, list[tuple[PatcherAnswer, dict[str, str]]]] = {}
        for _ in range(count):
            result = self._ask(
                "patcher", PATCHER_TOOL, request, evidence, sandbox, lambda r: validate(r, refuse_repeats=False)
            )
            if result is None:
                continue
            program = program_key(result[1])
            if program in self._tried:
                continue
            groups.setdefault(program, []).append(result)
        originals = {path: sandbox.read_file(path) for group in groups.values() for path in group[0][1]}

        def plausibility(group: list[tuple[PatcherAnswer, dict[str, str]]]) -> tuple[int, int]:
            files = group[0][1]
            return (-len(group), changed_line_count({p: originals[p] for p in files}, files))

        ranked = sorted(groups.values(), key=plausibility)
        self.trace(
            "patch_samples",
            f"patcher: {count} sample(s), {len(ranked)} distinct patch(es)",
            samples=count,
            distinct=len(ranked),
            votes=[len(group) for group in ranked],
        )
        return [group[0] for group in ranked]

    # -- one role call with a corrective re-ask -----------------------------------------------------------
    def _ask(
        self,
        role: str,
        tool: str,
        request: str,
        evidence: Evidence,
        sandbox: Sandbox,
        validate: Callable[[ModelResponse], R],
        *,
        context: str | None = None,
    ) -> R | None:
        """The validated answer, or None once a corrective re-ask also failed (a failed attempt). ``context``: a
        context of the role's own instead of the shared one.

        An answer that only asks for more context (the Detective's and the Patcher's ``asks``) is answered from
        the sandbox's copy and the same role is called again: not an invalid answer, up to ``MAX_ASK_ROUNDS``
        rounds per call and ``max_asks`` asks per heal; an ask past those is an invalid answer."""
        shared = self._context_of(evidence, sandbox)
        prefix = shared if context is None else context
        messages = [Message("user", request)]
        problem: InvalidAnswer | None = None
        rounds = 0
        for attempt in (1, 2):
            response = self._call(role, tool, prefix, messages)
            while (asks := self._asks_in(role, response)) and not self._ask_refusal(rounds):
                rounds += 1
                messages += [
                    Message("assistant", response.text.strip()),
                    Message("user", self._answer_asks(role, asks, evidence, sandbox, rounds)),
                ]
                response = self._call(role, tool, prefix, messages)
            try:
                if response.parse_error:
                    raise InvalidAnswer(response.parse_error)
                if asks:
                    raise InvalidAnswer(self._ask_refusal(rounds), asked=True)
                return validate(response)
            except EnvironmentDiagnosis as diagnosis:
                some = f" ({len(diagnosis.tests)} failing test(s))" if diagnosis.tests else ""
                self.trace(
                    "environment",
                    f"{role}: the environment, not the code{some}: {diagnosis.problem}",
                    role=role,
                    problem=diagnosis.problem,
                    tests=list(diagnosis.tests),
                )
                raise EngineStopped(
                    StopReason.ENVIRONMENT,
                    f"the {role} diagnosed the environment, not the code{some}: {diagnosis.problem}",
                    diagnosis.tests,
                ) from None
            except InvalidAnswer as bad:
                problem = bad
                self._last_problem = str(bad)
                self.budget.invalid_answers += 1
                self.trace(
                    "model_invalid",
                    f"{role}: unusable answer ({'re-asking' if attempt == 1 else 'giving up'}): {bad}",
                    role=role,
                    attempt=attempt,
                    problem=str(bad),
                )
                messages += [
                    Message("assistant", response.text.strip() or "(no answer)"),
                    Message("user", corrective_request(str(bad))),
                ]
        assert problem is not None
        if problem.repeated:
            raise EngineStopped(
                StopReason.REPEATED_EDIT,
                f"the {role} proposed the same edit again after being told it had already failed",
            )
        if problem.asked and role == "detective":
            # No hypothesis at all: say why, rather than "every hypothesis was tried".
            raise EngineStopped(
                StopReason.HYPOTHESES_EXHAUSTED,
                f"the detective gave no hypothesis: it kept asking for more context after being told to answer "
                f"({self.budget.asks} ask(s) answered; {problem})",
            )
        return problem.partial or None

    # -- asks for more context ----------------------------------------------------------------------------
    def _asks_left(self) -> int:
        return max(0, self.max_asks - self.budget.asks)

    def _ask_refusal(self, rounds: int) -> str:
        """Why another round of asks is not answered ("" when it is)."""
        if self.max_asks <= 0:
            return "asks for more context are not available in this run; answer with what is shown, without asks"
        if self._asks_left() <= 0:
            return f"all {self.max_asks} asks of this run are spent; give your final answer now, without asks"
        if rounds >= MAX_ASK_ROUNDS:
            return (
                f"{MAX_ASK_ROUNDS} rounds of asks is the most for one answer; give your final answer now, without asks"
            )
        return ""

    def _asks_in(self, role: str, response: ModelResponse) -> list[AskAnswer]:
        """The asks of an answer that only asks (no hypotheses or edits, no environment diagnosis); [] for any
        other answer, whose asks, if any, are ignored (said in the trace)."""
        schema = ASKING_ROLES.get(role)
        if schema is None or response.parse_error or response.tool_input is None:
            return []
        try:
            answer = schema.model_validate(response.tool_input)
        except ValidationError:
            return []  # the role's validation says what is wrong
        if not answer.asks:
            return []
        content = answer.hypotheses if isinstance(answer, DetectiveAnswer) else answer.edits
        if content or answer.environment_problem.strip():
            self.trace(
                "ask_ignored",
                f"{role}: the answer carries both an answer and {len(answer.asks)} ask(s); the asks are ignored",
                role=role,
                asks=[a.model_dump() for a in answer.asks],
            )
            return []
        return list(answer.asks)

    def _answer_asks(
        self, role: str, asks: Sequence[AskAnswer], evidence: Evidence, sandbox: Sandbox, rounds: int
    ) -> str:
        """One round of asks answered through the sandbox's copy (as many as are left), as the next user turn."""
        view = self._view_of(evidence, sandbox)
        replies: list[AskReply] = []
        for ask in asks[:MAX_ASKS_PER_ANSWER]:
            if self._asks_left() <= 0:
                replies.append(AskReply(ask_heading(ask), "no asks are left in this run", refused=True))
                continue
            self.budget.asks += 1
            reply = view.answer(ask)
            self.asked_files.update(reply.files)
            replies.append(reply)
        editable = set(sandbox.source_files())
        new = sorted(path for path in self.asked_files if path in editable and path not in self._file_lines)
        if new:
            # A source file an ask showed may be named in an answer: the schemas' file enum grows to hold it
            # (the tools change, so the cached prefix is rebuilt once for the calls after this one).
            self._tools = self._tools_for(sandbox, [*self._file_lines, *new])
        text = reply_message(replies, self._asks_left(), MAX_ASK_ROUNDS - rounds)
        answered = sum(not r.refused for r in replies)
        self.trace(
            "ask",
            f"{role}: {len(replies)} ask(s) ({'; '.join(ask_heading(a) for a in asks)}), {answered} answered, "
            f"{len(text)} characters back; {self._asks_left()} ask(s) left",
            role=role,
            round=rounds,
            asks=[a.model_dump() for a in asks],
            answers=[{"heading": r.heading, "refused": r.refused, "chars": len(r.body)} for r in replies],
            answer_chars=len(text),
            asks_left=self._asks_left(),
        )
        return text

    def _view_of(self, evidence: Evidence, sandbox: Sandbox) -> RepositoryView:
        if self._view is None or self._view_evidence is not evidence:
            focus: dict[str, list[int]] = {}
            for item in evidence.suspicious_lines:
                focus.setdefault(item.file, []).append(item.line)
            # the test files the failing stacks pass through too: a suite's entry file may require the one that
            # defines the test (readers' searches for Hexo's failing titles found nothing)
            stacks = [path for failure in evidence.failures for path in stack_test_files(failure)]
            tests = evidence_test_files([*evidence.f2p_tests, *evidence.p2p_tests, *stacks], sandbox.read_file)
            self._view = RepositoryView(sandbox.read_file, sandbox.source_files(), tests, focus)
            self._view_evidence = evidence
        return self._view

    def _call(self, role: str, tool: str, context: str, messages: Sequence[Message]) -> ModelResponse:
        """One answer; when the server shows it ignored the structured mode (a forced tool never called) and the
        model can step down ("auto"), the same request again in the next mode."""
        while True:
            response = self._call_once(role, tool, context, messages)
            step_down = getattr(self.model, "step_down", None)
            if not response.mode_ignored or step_down is None:
                return response
            lower = step_down()
            if lower is None:
                return response
            self.trace(
                "model_structured",
                f"{role}: the server ignored the {response.structured} mode; asking again with {lower}",
                role=role,
                ignored=response.structured,
                mode=lower,
            )

    def _call_once(self, role: str, tool: str, context: str, messages: Sequence[Message]) -> ModelResponse:
        self.budget.check(role)
        request = ModelRequest(
            system=SYSTEM_PROMPT,
            context=context,
            messages=tuple(messages),
            tools=self._tools or tool_specs(),
            tool=tool,
            max_tokens=self.budget.output_allowance(self.output_tokens.get(role, 2000)),
            timeout=self.budget.time_left(),  # one answer cannot outlast the run's time
        )
        started = time.monotonic()
        try:
            response = self.model.complete(request)
        except ModelError as err:
            self._note_retries(role, err.retries)
            self.trace("model_error", f"{role}: {err}", role=role, status=err.status, prompt=request.as_messages())
            left = self.budget.time_left()
            if err.timed_out and left is not None and left < 1.0:  # the run's time ran out, not the server
                raise EngineStopped(
                    StopReason.TIME_LIMIT, f"the run's time limit was reached during the {role} call"
                ) from err
            raise EngineStopped(StopReason.MODEL_ERROR, str(err)) from err
        self._note_retries(role, response.retries)
        seconds = time.monotonic() - started
        cost = self.budget.record(role, response.usage, seconds)
        usage = response.usage
        self.trace(
            "model_call",
            f"{role}: {usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens} in "
            f"({usage.cache_read_tokens} cached), {usage.output_tokens} out, ${cost:.4f}",
            role=role,
            model=response.model,
            tool=tool,
            structured=response.structured,
            prompt=request.as_messages(),
            response=response.text,
            stop_reason=response.stop_reason,
            usage=usage.as_dict(),
            cost_usd=round(cost, 6),
            seconds=round(seconds, 3),
        )
        return response

    def _note_retries(self, role: str, notes: Sequence[Any]) -> None:
        self.budget.retries += len(notes)
        for note in notes:
            self.trace(
                "model_retry",
                f"{role}: {note.describe()}",
                role=role,
                status=note.status,
                requested_wait=note.requested_wait,
                waited=round(note.waited, 3),
            )

    def _context_of(self, evidence: Evidence, sandbox: Sandbox) -> str:
        self._read = sandbox.read_file
        if self._context_evidence is not evidence:
            if self._context_evidence is not None:
                # Other tests to make pass (the loop left the environment's out): earlier verdicts are stale.
                self._tried.clear()
                self._yielded_programs.clear()
            similar = self.similar_fixes(evidence) if self.similar_fixes else ""
            slices = source_slices(evidence, sandbox.read_file)
            self._context = self._base_context = build_context(evidence, sandbox.read_file, similar, slices)
            if self._tools is None:
                editable = set(sandbox.source_files())
                self._tools = self._tools_for(sandbox, [path for path in slices if path in editable])
            if self._prior_attempts:
                self._context += "\n" + self._prior_attempts
            self._context_evidence = evidence
        return self._context

    def _tools_for(self, sandbox: Sandbox, shown: Sequence[str]) -> tuple[Any, ...]:
        """The three tools with schemas pinned to what the model was shown (its source files as an enum, line
        numbers in range), the same for every call of the run so the cached prefix stays identical. With
        nothing shown (no localization), every source file."""
        for path in shown or sandbox.source_files():
            count = _line_count(sandbox.read_file, path)
            if count is not None:
                self._file_lines[path] = count
        return tool_specs(ProjectBounds(dict(self._file_lines), hypotheses=self.n_hypotheses, asks=self.max_asks > 0))


def _line_count(read_file: Callable[[str], str], path: str) -> int | None:
    try:
        return max(1, len(read_file(path).splitlines()))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def patcher_code(hypothesis: Hypothesis, sandbox: Sandbox) -> tuple[dict[str, set[int]], str]:
    """What a Patcher reads of the code (the lines shown, and their text): every place the hypothesis names, then
    the project's definitions its text names beside them (``llm/named.py``)."""
    places = locations_slice(hypothesis.locations(), sandbox.read_file)
    code = render_slices(places, sandbox.read_file)
    named = named_definitions(hypothesis, sandbox.source_files(), sandbox.read_file, places)
    if named:
        code += "\n\nThe project's definitions the hypothesis names, beside those places:\n" + render_slices(
            named, sandbox.read_file
        )
    shown = {path: set(lines) for path, lines in places.items()}
    for path, lines in named.items():
        shown.setdefault(path, set()).update(lines)
    return shown, code


def _implicated(verdict: Verification, places: Mapping[str, set[int]], sandbox: Sandbox) -> str:
    """The current code of the project lines a failed verification's output names, beyond the places already
    shown: where the attempt's failure surfaced."""
    wanted = frames_slice(verdict.detail, sandbox.read_file, dict(places))
    return render_slices(wanted, sandbox.read_file) if wanted else ""


# -- helpers ------------------------------------------------------------------------------------------
def _parse(response: ModelResponse, schema: type[A]) -> A:
    if response.tool_input is None:
        raise InvalidAnswer(response.parse_error or "the answer carried no tool arguments")
    try:
        return schema.model_validate(response.tool_input)
    except ValidationError as exc:
        raise InvalidAnswer(f"the arguments do not match the schema: {validation_message(exc)}") from exc


def _qa_answer_for(path: str) -> Callable[[ModelResponse], QAAnswer]:
    """The parser of a QA answer whose test (saved as ``path``) can be run: the reproduction test's and the
    settling test's."""

    def parse(response: ModelResponse) -> QAAnswer:
        answer = _parse(response, QAAnswer)
        problem = qa_source_problem(answer.test_source, path)
        if problem:
            raise InvalidAnswer(problem)
        return answer

    return parse


def qa_source_problem(source: str, path: str = "test_qa.py") -> str | None:
    """Why ``source`` cannot be a QA test saved as ``path`` (a pytest module, or a JavaScript spec file), or
    None."""
    if is_node_file(path):
        if (problem := syntax_problem(path, source)) is not None:
            return f"test_source does not parse: {problem}"
        if not has_node_test(path, source):
            return "test_source declares no test (an it(...) or test(...) call, or a RuleTester run(...))"
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"test_source does not parse: {exc.msg} at line {exc.lineno}"
    tests = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    if not tests:
        return "test_source has no test function (a function whose name starts with test_)"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            "conftest",
            "_selfix_qa",
        ):
            return "test_source must not import from conftest or _selfix_qa"
    return None


def property_source_problem(source: str) -> str | None:
    """Why ``source`` cannot be a property test module (a QA test module that imports Hypothesis), or None."""
    problem = qa_source_problem(source)
    if problem:
        return problem.replace("test_source", "property_source")
    tree = ast.parse(source)
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    } | {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    if "hypothesis" not in imported:
        return "property_source does not import hypothesis"
    return None


def _same_symbol(a: str, b: str) -> bool:
    def norm(symbol: str) -> str:
        return symbol.strip().strip("`").removesuffix("()").lower()

    x, y = norm(a), norm(b)
    return x == y or x.endswith("." + y) or y.endswith("." + x)


def _similar(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a.lower().split(), b.lower().split()).ratio() >= SIMILAR


def merge_near_duplicates(items: Sequence[HypothesisAnswer]) -> list[HypothesisAnswer]:
    """One hypothesis per idea: same file and symbol, and a similar title or proposed fix, merge into the more
    confident one (their line ranges joined)."""
    kept: list[HypothesisAnswer] = []
    for item in items:
        for index, other in enumerate(kept):
            if (
                item.file == other.file
                and _same_symbol(item.symbol, other.symbol)
                and (_similar(item.title, other.title) or _similar(item.proposed_fix, other.proposed_fix))
            ):
                better, worse = (other, item) if other.confidence >= item.confidence else (item, other)
                kept[index] = better.model_copy(
                    update={
                        "line_start": min(better.line_start, worse.line_start),
                        "line_end": max(better.line_end, worse.line_end),
                        "reasoning": f"{better.reasoning} (merged with a near-duplicate: {worse.title})",
                    }
                )
                break
        else:
            kept.append(item)
    return kept


def _summarize(answer: PatcherAnswer, limit: int = 400) -> str:
    parts = []
    for edit in answer.edits:
        search = " ".join(edit.search.split())
        replace = " ".join(edit.replace.split())
        parts.append(f"in {edit.file}: `{search}` -> `{replace}`")
    text = "; ".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."
