"""The run's outcome as a validated value (report.json) and its human rendering (report.md)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from selfix_action.errors import ExitCode
from selfix_action.repair.review import Review
from selfix_action.repair.values import (
    Hypothesis,
    PropertyRecord,
    ReproductionRecord,
    SuspiciousFunction,
    SuspiciousLine,
    TestResult,
    Verification,
    VerifyStage,
)

REPORT_VERSION = 1


class StopReason(StrEnum):
    """Why a heal stopped. Only ``HEALED`` exits 0: a patch verified on the failing tests and the passing tests
    guarding its edit, then confirmed on the whole suite. ``VERIFIED_UNCONFIRMED`` carries a patch that passed the
    first two but whose whole-suite confirmation the budget did not allow (exit 1: review it, nothing is
    published as a fix). ``SANDBOX_ERROR``: the sandbox could not re-run the tests it was asked for (exit 2, the
    exit of a test command that cannot run at all), never read as flakiness."""

    HEALED = "healed"
    VERIFIED_UNCONFIRMED = "verified_unconfirmed"
    NO_FAILING_TESTS = "no_failing_tests"
    NOT_REPRODUCIBLE = "not_reproducible"
    ONLY_SANDBOX_FAILURES = "only_sandbox_failures"  # what fails here passed in CI: the sandbox's doing
    ONLY_HUNG_TESTS = "only_hung_tests"  # the only failing tests hang: a suite that never finishes, not a bug's test
    NO_SUSPECTS = "no_suspects"
    HYPOTHESES_EXHAUSTED = "hypotheses_exhausted"
    CANDIDATE_BUDGET = "candidate_budget_exhausted"
    TEST_RUN_BUDGET = "test_run_budget_exhausted"
    TIME_LIMIT = "time_limit"
    BUDGET_EXHAUSTED = "budget_exhausted"  # the engine's own budget: model calls, tokens, dollars
    MODEL_ERROR = "model_error"
    REPEATED_EDIT = "repeated_identical_edit"
    SANDBOX_ERROR = "sandbox_error"
    ENVIRONMENT = "environment_not_code"  # the engine diagnosed the environment, not the code: nothing to patch
    # The JUnit report's failing tests are not in this checkout (another commit's report?): bad input, exit 2.
    REPORT_MISMATCH = "report_tests_not_found"
    # --from-error: no test QA wrote failed with the reported exception at the reported project frame.
    ERROR_NOT_REPRODUCED = "error_not_reproduced"

    @property
    def exit_code(self) -> ExitCode:
        if self is StopReason.HEALED:
            return ExitCode.HEALED
        if self in (StopReason.NO_FAILING_TESTS, StopReason.NOT_REPRODUCIBLE, StopReason.ONLY_SANDBOX_FAILURES):
            return ExitCode.NOTHING_TO_HEAL
        if self in (StopReason.SANDBOX_ERROR, StopReason.ONLY_HUNG_TESTS, StopReason.REPORT_MISMATCH):
            return ExitCode.BAD_INPUT
        return ExitCode.NOT_HEALED


STOP_EXPLANATIONS = {
    StopReason.HEALED: "a patch made every failing test pass without breaking a passing one",
    StopReason.VERIFIED_UNCONFIRMED: (
        "a patch made the failing tests pass without breaking the passing tests that run the code it edits, but "
        "the budget ran out before the whole suite could confirm it: review it before applying"
    ),
    StopReason.NO_FAILING_TESTS: "no test fails, so there is nothing to heal",
    StopReason.ERROR_NOT_REPRODUCED: (
        "no reproduction test failed with the reported exception raised at the reported place in the project's "
        "code, so there is no failing test to heal against and no patch (see what each attempt did)"
    ),
    StopReason.NOT_REPRODUCIBLE: "the failing tests passed when re-run in the sandbox: probably flaky, no patch",
    StopReason.ONLY_SANDBOX_FAILURES: (
        "the only tests that fail in the sandbox passed in the CI report, so the sandbox made them fail (see the "
        "sandbox failures): nothing to heal, no patch"
    ),
    StopReason.ONLY_HUNG_TESTS: (
        "the only failing tests hang (the test-run time limit killed them, see the hung tests): a hang is never "
        "taken as a test to heal; raise the test-run limit (--test-timeout) if they are only slow, no patch"
    ),
    StopReason.NO_SUSPECTS: "localization found no line of the project's source that the failing tests reach",
    StopReason.HYPOTHESES_EXHAUSTED: "every hypothesis was tried and no candidate patch passed verification",
    StopReason.CANDIDATE_BUDGET: "the candidate budget ran out before a patch passed verification",
    StopReason.TEST_RUN_BUDGET: "the test-run budget ran out before a patch passed verification",
    StopReason.TIME_LIMIT: "the time limit ran out before a patch passed verification",
    StopReason.BUDGET_EXHAUSTED: "the engine's budget (calls, tokens or cost) ran out before a patch was verified",
    StopReason.MODEL_ERROR: "the model could not be used (see the notes)",
    StopReason.REPEATED_EDIT: "the engine kept proposing the same edit, so the loop stopped",
    StopReason.SANDBOX_ERROR: "the sandbox could not re-run the tests it was asked for (see the notes), so no verdict",
    StopReason.ENVIRONMENT: (
        "the failure comes from the environment the tests run in, not from the project's code (see the diagnosis "
        "in the notes), so no code was patched"
    ),
    StopReason.REPORT_MISMATCH: (
        "none of the failing tests in the JUnit report is in this checkout (is the report from another commit?), "
        "so what failed in CI cannot be re-run here"
    ),
}


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class RoleUsage(Frozen):
    """Calls, tokens (cached ones apart), dollars and seconds waiting for answers: one role's, or the run's."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    tokens: int = 0  # all four kinds: what the token cap counts
    cost_usd: float = 0.0
    model_seconds: float = 0.0


class PricePerMillion(Frozen):
    """USD per million tokens of each kind, as the run priced them."""

    input: float
    output: float
    cache_read: float
    cache_write: float


class UsageLimits(Frozen):
    """The caps the engine ran under (0: no cap)."""

    max_calls: int = 0
    max_tokens: int = 0
    max_cost_usd: float = 0.0
    time_limit_seconds: float = 0.0
    max_asks: int = 0


class PreflightUsage(Frozen):
    """What the check before the run found: how many models the server listed, and its note."""

    models_listed: int = 0
    note: str = ""


class OfflineUsage(Frozen):
    """``--engine auto``: what the offline engine spent before the hand-over, and whether it handed over."""

    candidates: int = 0
    hypotheses: int = 0
    handed_over: bool = False


class Usage(RoleUsage):
    """What an engine spent (``Engine.usage()``), carried in report.json under ``usage``: the run's totals, the
    same per role, the model and its price, the counts of retries, invalid answers and asks, and the caps. The
    offline engine spends nothing: ``Usage()``, written as ``{}``; ``preflight`` and ``offline`` are written only
    when there is one."""

    provider: str = ""
    model: str = ""
    structured: str = ""  # how the server returned structured answers at the end (tools, json-schema, json)
    by_role: dict[str, RoleUsage] = Field(default_factory=dict)
    retries: int = 0
    invalid_answers: int = 0
    asks: int = 0
    elapsed_seconds: float = 0.0
    price_per_million_tokens: PricePerMillion | None = None
    price_known: bool = False
    limits: UsageLimits = Field(default_factory=UsageLimits)
    preflight: PreflightUsage | None = None
    offline: OfflineUsage | None = None

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        if self == Usage():
            return {}  # no engine spending: the shape report.json always had for the offline engine
        written: dict[str, Any] = handler(self)
        for optional in ("preflight", "offline"):
            if written.get(optional) is None:
                written.pop(optional, None)
        return written


class HypothesisRecord(Frozen):
    hypothesis: Hypothesis
    exposed: bool
    exposure: str  # how the hypothesis was exposed, or why it was not
    candidates_tried: int = 0
    outcome: str = ""  # "healed by <patch>", "rejected: ...", "dropped: not exposed", "not reached"
    rejections: tuple[Verification, ...] = ()  # the first few failed verifications, as evidence
    # Every failed verdict by stage, the static sanity refusals (stage ``static_sanity``, never tested) included.
    rejections_by_stage: dict[str, int] = Field(default_factory=dict)
    # The hypothesis' property test (repair.properties): its counterexample on the unpatched code, whether it held
    # on the patch; None when QA stated none.
    property_test: PropertyRecord | None = None

    @property
    def rejected(self) -> int:
        """Candidates of this hypothesis that were tried (tests ran on them) and failed verification or the
        whole-suite confirmation: at most ``candidates_tried``."""
        return sum(n for stage, n in self.rejections_by_stage.items() if stage != VerifyStage.SANITY.value)

    @property
    def refused_static(self) -> int:
        """Candidates refused by static sanity before any test ran: not tried, so not in ``candidates_tried``."""
        return self.rejections_by_stage.get(VerifyStage.SANITY.value, 0)


def property_verdict(record: PropertyRecord) -> str:
    """One line: what the hypothesis' property test showed on the unpatched code and on the patch."""
    if not record.used:
        return f"not used: {record.note}"
    rejected = f"; rejected {', '.join(record.rejected)} as partial fix(es)" if record.rejected else ""
    if record.held_on_patch:
        return f"a counterexample on the unpatched code, none on the patch in {record.examples} example(s){rejected}"
    return f"a counterexample on the unpatched code; {record.note or 'no patch of this hypothesis won'}{rejected}"


_FENCE = "`" * 3


def fenced_lines(text: str, indent: str = "  ", lang: str = "") -> list[str]:
    """``text`` as a fenced block inside a list item (a fence in the text cannot close it)."""
    body = [f"{indent}{line}".rstrip() for line in text.replace(_FENCE, "`\u02cb`").splitlines()]
    return [f"{indent}{_FENCE}{lang}", *body, f"{indent}{_FENCE}"]


def property_markdown(record: PropertyRecord) -> list[str]:
    """report.md's lines for one hypothesis' property test: the verdict, the counterexample, the test."""
    out = [f"- Property test: {property_verdict(record)}"]
    if record.counterexample:
        out += ["  Counterexample on the unpatched code:", *fenced_lines(record.counterexample)]
    return [*out, "  The property test:", *fenced_lines(record.source, lang="python")]


class PatchRecord(Frozen):
    candidate_id: str
    hypothesis_id: str
    template: str
    description: str
    files: tuple[str, ...]
    diff: str
    changed_lines: int
    minimized_from_hunks: int
    hunks: int
    # False: verified on the failing and the guarding passing tests only; the whole suite never ran on it.
    confirmed: bool = True


ConfidenceLevel = Literal["high", "medium", "low"]
CONFIDENCE_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}


class ConfidenceReason(Frozen):
    """One signal about a verified patch. ``level`` is the highest confidence it allows: a ``low`` reason makes
    the patch low, a ``medium`` one caps it at medium, a ``high`` one is evidence for it and caps nothing."""

    code: str  # stable id: "unconfirmed", "pattern:guard_deleted", "p2p_behaviour_changed", ...
    level: ConfidenceLevel
    text: str


class Confidence(Frozen):
    """How far a verified patch can be trusted as the real fix (``repair.plausibility.assess_confidence``): the
    lowest level any reason allows; reasons that lowered it first."""

    level: ConfidenceLevel
    reasons: tuple[ConfidenceReason, ...]
    plausibility: float = 1.0  # the overfitting patterns' product (1.0: none)
    alternatives_checked: int = 0  # candidates verified after the first one that passed
    alternatives_passed: int = 0  # of those (and any before the winner), the ones that passed too


class InputChange(Frozen):
    """One input on which two versions of an edited function behave differently (the behaviour probe)."""

    function: str  # path:qualname
    input: str  # the arguments, as text
    variation: str  # "as recorded", or how it was varied from a recorded call ("argument 1 as a tuple")
    test: str  # the test whose call it is, or was varied from
    source: str  # "failing" or "passing": which kind of test made the recorded call
    before: str  # the outcome on the first version (the unpatched code; the patch, against a second patch)
    after: str  # the outcome on the second version

    @property
    def outside(self) -> bool:
        """A call a passing test made, exactly as it made it, now behaves differently: a change outside what the
        failing tests exercise, and nothing checked it."""
        return self.source == "passing" and self.variation == "as recorded"


class BehaviourEvidence(Frozen):
    """What the edited functions did on the inputs the tests passed them and on variations of those, unpatched
    and patched; and, when a second solution passed verification too, where the two patches differ."""

    recorded: int = 0  # distinct calls recorded from the tests
    compared: int = 0  # inputs replayed on both versions
    unstable: int = 0  # inputs whose outcome differed between two runs of the unpatched code (left out)
    changed: tuple[InputChange, ...] = ()  # unpatched -> patch: the inputs whose outcome changed
    second_source: str = ""  # where the second solution came from ("" none was verified)
    second_diff: str = ""
    disagreements: tuple[InputChange, ...] = ()  # the patch -> the second solution
    # Inputs from the failing tests' calls (as recorded or varied) that raise alike before and after the patch:
    # siblings of the failing input the patch may have left out (a string handled, a tuple not).
    still_raising: tuple[InputChange, ...] = ()
    settled: str = ""  # how QA's settling test decided between the two solutions ("" it did not)
    settling_test: str = ""  # that test's source
    note: str = ""  # why the probe (or part of it) could not run

    @property
    def outside(self) -> tuple[InputChange, ...]:
        return tuple(c for c in self.changed if c.outside)

    @property
    def blind(self) -> bool:
        """Inputs were compared, yet no call a failing test made behaves differently with the patch: the fix
        acts through what the probe does not see (a closure, a callback, module state), so its comparisons say
        little of it (an ESLint rule's visitor reports through its ``context``)."""
        fixed = any(c.source == "failing" and c.variation == "as recorded" for c in self.changed)
        return self.compared > 0 and not fixed


class HealReport(Frozen):
    version: int = REPORT_VERSION
    repo: str
    project_folder: str = ""  # the project's folder in the repository ("" the root); patch paths are the repository's
    engine: str
    stop_reason: StopReason
    explanation: str
    exit_code: int
    f2p_tests: tuple[str, ...] = ()  # node ids: relative to the project's folder (project_folder)
    p2p_tests: tuple[str, ...] = ()
    flaky_tests: tuple[str, ...] = ()
    # Killed by the test-run time limit on the unpatched code: left out of every run after the first, never F2P.
    hung_tests: tuple[str, ...] = ()
    # A heal from a production error (--from-error): where it came from and how it was reproduced; None otherwise.
    reported_error: ReproductionRecord | None = None
    # Passed in the CI report, failed in the sandbox (with the sandbox's failure): never healed nor used as P2P.
    sandbox_failures: tuple[TestResult, ...] = ()
    failures: tuple[TestResult, ...] = ()
    coverage_used: bool = False
    localization_note: str = ""
    suspicious_lines: tuple[SuspiciousLine, ...] = ()
    suspicious_functions: tuple[SuspiciousFunction, ...] = ()
    hypotheses: tuple[HypothesisRecord, ...] = ()
    patch: PatchRecord | None = None
    # How far the patch can be trusted (None without a patch): level "high"/"medium"/"low" and the reasons.
    confidence: Confidence | None = None
    behaviour: BehaviourEvidence | None = None  # the behaviour probe's evidence on the patch (repair/differential)
    # The reviewer's verdict on the confirmed patch (repair.review), one of the confidence's reasons too; None when
    # the engine has no reviewer or it gave no verdict (the notes say why).
    review: Review | None = None
    # What the patch was checked on, and what not and why: "confirmed on the whole suite", or "F2P and guarding
    # P2P only; not confirmed on the whole suite: time limit"; "" without a patch.
    verification: str = ""
    tests_before: dict[str, str] = Field(default_factory=dict)
    tests_after: dict[str, str] = Field(default_factory=dict)
    test_runs: int = 0
    candidates_tried: int = 0
    # Candidates refused by static sanity (repair.sanity) before any test ran; not in ``candidates_tried``.
    candidates_rejected_static: int = 0
    timings: dict[str, float] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # The engine's diagnosis of the environment: the stop ENVIRONMENT (no patch), or why ``environment_tests``,
    # failing tests it named as the environment's, were left out of the tests to heal.
    environment_problem: str = ""
    environment_tests: tuple[str, ...] = ()
    usage: Usage = Field(default_factory=Usage)  # what the engine spent: calls, tokens, cost per role
    isolation: dict[str, Any] = Field(default_factory=dict)  # the sandbox boundary every test run had
    # Failing tests the JUnit report names that this checkout does not have, and the tests that fail here without
    # the report naming them as failing (healed only when asked: LoopConfig.heal_seen_failures).
    junit_missing: tuple[str, ...] = ()
    seen_failures: tuple[str, ...] = ()
    # What to try next when not healed (heal.next_step, in the spelling of the front end that ran); "" if healed.
    next_step: str = ""
    # --engine auto whose LLM engine could not be set up (a rejected key, an unreachable server, a missing SDK, a
    # cost cap without a price): only the offline engine ran; "" otherwise.
    llm_problem: str = ""
    # How the sandbox ran them: "hot" checks (pre-imported worker, a fork per check), "warm" (fork-per-run pytest),
    # "cold" (a fresh pytest process: the baseline, reproduction and the confirmation of the winner among them).
    process_runs: dict[str, int] = Field(default_factory=dict)
    # What selfix changed of the project's own pytest configuration for its runs, and why ("-n 2 -> no xdist
    # workers (...)"); everything else of it (ini files, conftest.py, other plugins and options) is kept.
    pytest_overrides: tuple[str, ...] = ()

    @property
    def candidates_rejected(self) -> int:
        """The one count of rejected candidates that every summary uses: those tried (``candidates_tried``)
        that failed verification or the whole-suite confirmation, over every hypothesis. The winner is not one,
        nor is a static sanity refusal (``candidates_rejected_static``: never tried), so it never exceeds
        ``candidates_tried``."""
        return sum(record.rejected for record in self.hypotheses)


def _status_counts(statuses: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"


TOP_REASONS = 3  # the confidence reasons on a report's first screen; the rest are with the patch below


def first_screen(report: HealReport) -> list[str]:
    """What a reader needs before any detail: the outcome, the confidence with its top reasons, the patch."""
    out = [f"- Outcome: `{report.stop_reason.value}` (exit {report.exit_code})"]
    if report.confidence is not None and report.patch is not None:
        marks = {"low": "lowers it to low", "medium": "caps it at medium", "high": "supports high"}
        out.append(f"- Confidence: **{report.confidence.level}**")
        out += [f"  - {r.text} ({marks[r.level]})" for r in report.confidence.reasons[:TOP_REASONS]]
        if len(report.confidence.reasons) > TOP_REASONS:
            out.append(f'  - ... {len(report.confidence.reasons) - TOP_REASONS} more under "The patch" below')
    if report.patch is None:
        return [*out, "- Patch: none passed verification, so none is proposed"]
    patch = report.patch
    files = ", ".join(f"`{f}`" for f in patch.files)
    out.append(f"- Patch `{patch.candidate_id}`: {patch.description}, in {files}")
    if report.verification:
        out.append(f"- Checked: {report.verification}")
    return [*out, "", "```diff", patch.diff.rstrip("\n"), "```"]


CELL_WIDTH = 120


def _cell(text: str, start: int = 0) -> str:
    """A table cell of ``text`` from ``start`` on ("..." marks what is cut), in CELL_WIDTH characters."""
    text = text.replace("|", "\\|").replace("\n", " ").replace("`", "'")
    shown = text if start <= 0 else "..." + text[start:]
    return "`" + (shown if len(shown) <= CELL_WIDTH else shown[: CELL_WIDTH - 3] + "...") + "`"


def _cells(before: str, after: str) -> tuple[str, str]:
    """Two outcomes as cells that show where they differ: when the difference lies past what a cell holds (an
    encoder's 30th byte), both start a little before it (readers saw equal cells for different outcomes)."""
    common = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        common += 1
    start = common - 20 if common > CELL_WIDTH - 30 else 0
    return _cell(before, start), _cell(after, start)


def change_table(changes: Sequence[InputChange], *, old: str, new: str, limit: int = 10) -> list[str]:
    """A Markdown table of inputs whose outcome changed, old -> new (report.md, the PR body, the reviewer)."""
    if not changes:
        return []
    rows = [f"| function | input | from | {old} | {new} |", "|---|---|---|---|---|"]
    for change in changes[:limit]:
        origin = f"{change.source} test" + ("" if change.variation == "as recorded" else f", {change.variation}")
        name = change.function.rsplit(":", 1)[-1].replace("|", "")
        before, after = _cells(change.before, change.after)
        rows.append(f"| `{name}` | {_cell(change.input)} | {origin} | {before} | {after} |")
    if len(changes) > limit:
        rows.append(f"| ({len(changes) - limit} more in report.json) | | | | |")
    return rows


def behaviour_lines(report: HealReport, *, limit: int = 10) -> list[str]:
    """The behaviour probe's evidence on the patch: the inputs whose outcome changed, and where a second solution
    disagrees; [] when the probe did not run."""
    probe = report.behaviour
    if probe is None:
        return []
    out = ["### Behaviour beyond the tests", ""]
    if not probe.compared:
        return [*out, f"Not measured: {probe.note or 'nothing was replayed'}.", ""]
    out.append(
        f"The edited functions ran on {probe.compared} input(s): the {probe.recorded} call(s) the tests made and "
        f"variations of them, unpatched and patched"
        + (f" ({probe.unstable} left out: their outcome varies from run to run)" if probe.unstable else "")
        + f". {len(probe.changed)} changed outcome; {len(probe.outside)} of them a passing test's own call."
    )
    out += ["", *change_table(probe.changed, old="unpatched", new="patched", limit=limit)]
    if probe.still_raising:
        out += ["", f"{len(probe.still_raising)} input(s) from the failing tests' calls still raise alike:", ""]
        out += change_table(probe.still_raising, old="unpatched", new="patched", limit=min(limit, 5))
    if probe.second_source:
        out += ["", f"Second solution ({probe.second_source}): "]
        if probe.disagreements:
            out[-1] += f"behaves differently on {len(probe.disagreements)} input(s)."
            if probe.settled:
                out[-1] += f" Settled: {probe.settled}."
            out += ["", *change_table(probe.disagreements, old="this patch", new="second solution", limit=limit)]
            out += ["", "<details><summary>The second solution</summary>", "", "```diff"]
            out += [probe.second_diff.rstrip("\n"), "```", "", "</details>"]
        else:
            out[-1] += f"behaves the same on all {probe.compared} input(s)."
    if probe.note:
        out += ["", f"Note: {probe.note}."]
    return [*out, ""]


def reported_error_lines(report: HealReport) -> list[str]:
    """A heal from a production error (--from-error): where it came from, where it was raised in this checkout and
    how it was reproduced, each attempt's outcome included ([] for a heal of failing tests). Untrusted parts (the
    origin, the message, test output) are the caller's to clean."""
    record = report.reported_error
    if record is None:
        return []
    out = ["### Where the error came from", "", f"- Reported by: {record.origin}", f"- Error: `{record.headline}`"]
    out.append(
        f"- Raised at: `{record.site}` in this checkout" if record.site else "- Raised at: no frame of this checkout"
    )
    out.append(f"- Error fingerprint: `{record.fingerprint}`")
    if record.reproduced:
        added = report.patch is not None and record.test_path in report.patch.files
        out.append(
            f"- Reproduction test: `{record.test_path}`, written by QA, failed with the reported exception raised "
            "at that frame on the unpatched code (read from its own traceback)"
            + ("; this patch adds it as a new file, and it passes with the fix" if added else "")
        )
    for number, attempt in enumerate(record.attempts, 1):
        out.append(f"- Attempt {number}: {attempt}")
    return [*out, ""]


def render_markdown(report: HealReport) -> str:
    """report.md: first the outcome, the confidence and the patch (``first_screen``); then the details: what
    failed, what was tried in order and why each was dropped, the patch's record, tests, timings."""
    out = [f"# selfix: {report.stop_reason.value.replace('_', ' ')}", ""]
    out.append(f"**{report.explanation}.**")
    out += [f"\n{line}" for line in headline_facts(report)]
    out += ["", *first_screen(report)]
    if origin := reported_error_lines(report):
        out += ["", *(line.replace("### ", "## ", 1) for line in origin)]
    out += ["", "## Details", "", f"- Repository: `{report.repo}`", f"- Engine: `{report.engine}`"]
    out.append(f"- Test runs: {report.test_runs}; candidate patches: {candidate_counts(report)}")
    if report.process_runs:
        kinds = report.process_runs
        confirmed = report.patch is not None and report.patch.confirmed
        out.append(
            f"- How they ran: {kinds.get('hot', 0)} hot check(s) in a worker that imported the project once, "
            f"{kinds.get('warm', 0)} fork-per-run, {kinds.get('cold', 0)} fresh `pytest` process(es)"
            + (" (the patch's whole-suite confirmation was one of these)" if confirmed else "")
        )
    if report.pytest_overrides:
        out.append(f"- The project's pytest configuration, kept except: {'; '.join(report.pytest_overrides)}")
    total = report.timings.get("total", 0.0)
    steps = ", ".join(f"{k} {v:.1f}s" for k, v in report.timings.items() if k not in ("total", "tests"))
    out.append(f"- Time: {total:.1f}s ({steps}); {time_split(report)}")
    if report.isolation:
        out.append(f"- Isolation: {report.isolation.get('level', 'none')} ({report.isolation.get('mechanism', '')})")
        limits = report.isolation.get("limits")
        if isinstance(limits, dict):
            wall = limits.get("wall_seconds")
            out.append(
                f"- Limits per test run: {wall:g} s wall; memory {limits.get('memory', 'not reported')}; "
                f"processes: {limits.get('process_limit', 'not reported')}"
                if isinstance(wall, int | float)
                else f"- Limits per test run: memory {limits.get('memory', 'not reported')}"
            )
    for note in report.notes:
        out.append(f"- Note: {note}")

    if behaviour := behaviour_lines(report):
        out += ["", *(line.replace("### ", "## ", 1) for line in behaviour)]
    out += ["", "## What failed", ""]
    if report.failures:
        for failure in report.failures:
            out.append(f"- `{failure.nodeid}`: {failure.status.value} {failure.exc_type}")
            if failure.message:
                first = failure.message.strip().splitlines()[:6]
                out += ["", "  ```", *[f"  {line}" for line in first], "  ```", ""]
            for frame in failure.frames:
                out.append(f"  - `{frame.file}:{frame.line}` in `{frame.function}`: `{frame.code.strip()}`")
    else:
        out.append("No test failed.")
    if report.flaky_tests:
        out += ["", "Failed in CI but passed when re-run (flaky, not used): "]
        out += [f"- `{t}`" for t in report.flaky_tests]
    if report.hung_tests:
        out += ["", "Hung on the unpatched code, killed at the test-run time limit (left out, not healed):"]
        out += [f"- `{t}`" for t in report.hung_tests]
    if report.sandbox_failures:
        out += [
            "",
            "Passed in CI but failed in the sandbox (the sandbox's doing, not healed, not used as passing tests):",
        ]
        for failure in report.sandbox_failures:
            out.append(f"- `{failure.nodeid}`: {failure.status.value} {failure.exc_type}")
            if failure.message:
                first = failure.message.strip().splitlines()[:3]
                out += ["", "  ```", *[f"  {line}" for line in first], "  ```", ""]

    if report.environment_problem:
        out += ["", "## The environment, not the code", "", report.environment_problem]
        if report.environment_tests:
            out += ["", "Failing tests left out as the environment's (they still fail; no code was changed for them):"]
            out += [f"- `{t}`" for t in report.environment_tests]

    out += ["", "## Where the bug probably is", "", f"Localization: {report.localization_note}.", ""]
    if report.suspicious_functions:
        out += ["| rank | function | file | score |", "|---|---|---|---|"]
        for rank, func in enumerate(report.suspicious_functions[:8], 1):
            out.append(f"| {rank} | `{func.name}` | `{func.file}:{func.start}-{func.end}` | {func.score:.3f} |")

    out += ["", "## Hypotheses, in the order tried", ""]
    if not report.hypotheses:
        out.append("None.")
    for record in report.hypotheses:
        hyp = record.hypothesis
        out.append(f"### {hyp.rank}. {hyp.title}")
        out.append("")
        out.append(f"- Location: `{hyp.file}` `{hyp.symbol}` lines {', '.join(map(str, hyp.lines[:12]))}")
        out.append(f"- Confidence: {hyp.confidence:.2f}")
        if hyp.reasoning:
            out.append(f"- Reasoning: {hyp.reasoning}")
        out.append(f"- Exposed: {'yes' if record.exposed else 'no'}: {record.exposure}")
        out.append(f"- Candidates tried: {record.candidates_tried}, rejected: {record.rejected}")
        tested = {s: n for s, n in record.rejections_by_stage.items() if s != VerifyStage.SANITY.value}
        if tested:
            stages = ", ".join(f"{n} at {s}" for s, n in sorted(tested.items()))
            out.append(f"- Rejected candidates by stage: {stages}")
        if record.refused_static:
            out.append(f"- Candidates refused before any test ran (static sanity, not tried): {record.refused_static}")
        out.append(f"- Outcome: **{record.outcome}**")
        for rejection in record.rejections[:3]:
            out.append(f"  - `{rejection.candidate_id}` rejected at {rejection.stage.value}: {rejection.detail}")
        if record.property_test is not None:
            out += property_markdown(record.property_test)
        out.append("")

    out += ["## The patch", ""]
    if report.patch is None:
        out.append("No patch passed verification, so none is proposed.")
    else:
        patch = report.patch
        out.append(
            f"`{patch.candidate_id}`: {patch.description} (template `{patch.template}`, hypothesis "
            f"{patch.hypothesis_id}); the diff is at the top."
        )
        out.append(
            f"{patch.changed_lines} changed line(s) in {', '.join(f'`{f}`' for f in patch.files)}; "
            f"minimized from {patch.minimized_from_hunks} to {patch.hunks} hunk(s)."
        )
        if report.verification:
            out += ["", f"Checked: {report.verification}."]
        if report.confidence is not None:
            out += ["", *render_confidence(report.confidence)]
        if report.review is not None:
            out += ["", *render_review(report.review)]

    if report.usage.calls:
        out += ["", "## Model usage", ""]
        out += render_usage(report.usage)

    out += ["", "## Tests before and after", ""]
    out.append(f"- Before: {_status_counts(report.tests_before)}")
    if report.tests_after:
        out.append(f"- After (whole suite on the patched scratch copy): {_status_counts(report.tests_after)}")
        fixed = [t for t in report.f2p_tests if report.tests_after.get(t) == "passed"]
        out.append(f"- Fail-to-pass tests now passing: {len(fixed)} of {len(report.f2p_tests)}")
        broken = [t for t in report.p2p_tests if report.tests_after.get(t) not in ("passed", None)]
        out.append(f"- Pass-to-pass tests broken: {len(broken)} of {len(report.p2p_tests)}")
    return "\n".join(out) + "\n"


def headline_facts(report: HealReport, shown: int = 5) -> list[str]:
    """What a reader must see right after the headline (report.md, the job summary, the escalation comment): the
    LLM engine that could not be used, the report's failing tests missing here, and what to try next."""
    lines = []
    if report.llm_problem:
        lines.append(f"**Warning:** {report.llm_problem}")
    if report.junit_missing:
        names = ", ".join(f"`{t}`" for t in report.junit_missing[:shown])
        more = f" and {len(report.junit_missing) - shown} more" if len(report.junit_missing) > shown else ""
        lines.append(
            f"**The JUnit report's failing tests not in this checkout ({len(report.junit_missing)}):** {names}{more}"
        )
        if report.seen_failures:
            seen = ", ".join(f"`{t}`" for t in report.seen_failures[:shown])
            extra = f" and {len(report.seen_failures) - shown} more" if len(report.seen_failures) > shown else ""
            lines.append(
                f"**Failing here, not named failing by the report ({len(report.seen_failures)}):** {seen}{extra}"
            )
    if report.next_step:
        lines.append(f"**Next step:** {report.next_step}")
    return lines


def candidate_counts(report: HealReport) -> str:
    """The candidates in one phrase, the same in report.md, the console, the PR body and the job summary:
    "73 tried, 71 rejected; 22 refused untested (static sanity)". Rejected ones are among the tried ones."""
    counts = f"{report.candidates_tried} tried, {report.candidates_rejected} rejected"
    if report.candidates_rejected_static:
        counts += f"; {report.candidates_rejected_static} refused untested (static sanity)"
    return counts


def render_confidence(confidence: Confidence) -> list[str]:
    """The confidence level and every reason, marked by what it allows (report.md, PR bodies)."""
    lines = [f"Patch confidence: **{confidence.level}**. Why:", ""]
    marks = {"low": "lowers it to low", "medium": "caps it at medium", "high": "supports high"}
    for reason in confidence.reasons:
        lines.append(f"- {reason.text} ({marks[reason.level]})")
    return lines


def render_review(review: Review) -> list[str]:
    """The reviewer's verdict, its reason and the case it says the patch misses (report.md, PR bodies)."""
    lines = [f"- Reviewer's verdict: **{review.verdict}**: {review.reason}"]
    if review.missed:
        lines.append(f"- A case it says the patch misses: {review.missed}")
    return lines


def time_split(report: HealReport) -> str:
    """Where the wall time went: waiting for the model, running tests, the rest (selfix's own work)."""
    total = report.timings.get("total", 0.0)
    tests = report.timings.get("tests", 0.0)
    model = report.usage.model_seconds
    return f"model {model:.1f}s, tests {tests:.1f}s, other {max(0.0, total - tests - model):.1f}s"


def render_usage(usage: Usage) -> list[str]:
    """Calls, tokens and cost per role and in total (the engine's ``usage()``)."""
    rows = ["| role | calls | input | output | cached | model s | cost (USD) |", "|---|---|---|---|---|---|---|"]
    roles: dict[str, RoleUsage] = {**usage.by_role, "total": usage}
    for role, item in roles.items():
        cached = item.cache_read_tokens + item.cache_write_tokens
        rows.append(
            f"| {role} | {item.calls} | {item.input_tokens} | {item.output_tokens} "
            f"| {cached} | {item.model_seconds:.1f} "
            f"| {item.cost_usd:.4f} |"
        )
    model = f"{usage.provider}:{usage.model}".strip(":")
    limits = usage.limits.model_dump()
    rows.append("")
    rows.append(
        f"Model `{model}`; retries {usage.retries}; invalid answers {usage.invalid_answers}; "
        f"asks: {usage.asks}; "
        f"price known: {usage.price_known}; limits: {limits}."
    )
    return rows
