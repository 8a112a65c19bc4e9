"""Plain data the healing loop reasons about. No I/O here: the sandbox and engines produce these values."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TestStatus(StrEnum):
    __test__ = False  # not a pytest test class
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"


class Frame(Frozen):
    """One traceback frame inside the project's own code."""

    file: str  # repo-relative posix path
    line: int
    function: str
    code: str = ""


class TestResult(Frozen):
    __test__ = False  # not a pytest test class
    nodeid: str
    status: TestStatus
    duration: float = 0.0
    exc_type: str = ""
    message: str = ""
    frames: tuple[Frame, ...] = ()  # pruned to project files, outermost first
    # The loopback host:port a failed connection was aimed at, when the collector found one in the traceback
    # (a ConnectionRefusedError names no port): what ``services`` names the missing service by.
    address: str = ""

    @property
    def ok(self) -> bool:
        return self.status in (TestStatus.PASSED, TestStatus.SKIPPED)


class TestRun(Frozen):
    __test__ = False  # not a pytest test class
    """What one sandboxed test run told us."""

    results: dict[str, TestResult] = Field(default_factory=dict)
    # nodeid -> repo-relative file -> executed line numbers; None when no coverage was collected
    coverage: dict[str, dict[str, list[int]]] | None = None
    coverage_note: str = ""
    coverage_collector: str = ""  # what measured the coverage: "coverage.py", "sys.settrace", "sys.monitoring"
    timed_out: bool = False
    # Cut by the heal's time limit (``time_left``), not by the test-run limit: the test it stopped in did not hang.
    deadline_reached: bool = False
    returncode: int | None = None
    duration: float = 0.0
    output_tail: str = ""  # last lines of the run's output, for reports when nothing else explains a failure
    # What a test module at the repository's root can use: the installed pytest plugins, and its fixtures with
    # where each comes from (pytest, a plugin's name, conftest.py). Empty when pytest did not say.
    pytest_plugins: tuple[str, ...] = ()
    root_fixtures: tuple[tuple[str, str], ...] = ()
    python_version: str = ""  # the interpreter the tests ran on ("3.8.18"), as the collector reported it
    toolchain: str = ""  # a JavaScript project's runner and node ("mocha 10.8.2 on Node v20.20.2"); "" for pytest
    # Why the run could not report on every test it was asked for: the sandbox could not run it, or pytest ended
    # with a usage error, an internal error, an interruption (collection errors) or no test collected. A test
    # without a result was not run: it never reads as passed. Empty for an ordinary run (tests passed or failed).
    error: str = ""

    def failing(self) -> list[str]:
        return [n for n, r in self.results.items() if not r.ok]

    def passing(self) -> list[str]:
        return [n for n, r in self.results.items() if r.status == TestStatus.PASSED]


class SuspiciousLine(Frozen):
    file: str
    line: int
    score: float
    function: str | None = None  # qualified name of the enclosing function, if any


class SuspiciousFunction(Frozen):
    file: str
    name: str
    start: int
    end: int
    score: float


class Evidence(Frozen):
    """Everything the engines may look at: failing tests, pruned tracebacks, localization."""

    f2p_tests: tuple[str, ...]
    p2p_tests: tuple[str, ...]
    failures: tuple[TestResult, ...]
    suspicious_lines: tuple[SuspiciousLine, ...]
    suspicious_functions: tuple[SuspiciousFunction, ...]
    coverage_used: bool
    localization_note: str = ""
    user_hint: str = ""  # free text from the user ("/selfix fix <text>")
    # A heal from a production error: the error as reported (repair.reported_error.render_error), which the
    # failing test reproduces; the Detective reads its frames, library frames and recorded locals too.
    reported_error: str = ""
    # What a reproduction test under the scratch folder can use (the baseline run's TestRun fields of these names).
    pytest_plugins: tuple[str, ...] = ()
    root_fixtures: tuple[tuple[str, str], ...] = ()
    python_version: str = ""  # the interpreter the tests run on: a fix must be valid Python for it
    toolchain: str = ""  # a JavaScript project's runner and node version: QA tests are written for that runner
    # p2p test -> lines it covers, to pick the passing tests that guard an edited line
    covering_tests: dict[str, dict[int, tuple[str, ...]]] = Field(default_factory=dict)


class Location(Frozen):
    """One place in the project's source a hypothesis implicates: a file, the function, method or constant, and
    its lines."""

    file: str
    symbol: str
    lines: tuple[int, ...]


class Hypothesis(Frozen):
    id: str
    rank: int
    title: str
    confidence: float
    file: str  # the first place named (the one the fix starts at)
    symbol: str
    lines: tuple[int, ...]
    reasoning: str = ""
    proposed_fix: str = ""
    # Other places the same root cause needs changed (a finder function and its caller): most real fixes touch
    # several, and the Patcher sees the current code of each.
    also: tuple[Location, ...] = ()
    # What this hypothesis' own reproduction test showed on the unpatched code (set by the loop once the QA test
    # ran: failed as predicted, with which error), for the Patcher.
    reproduction: str = ""

    def locations(self) -> tuple[Location, ...]:
        """Every place named, the first one first."""
        return (Location(file=self.file, symbol=self.symbol, lines=self.lines), *self.also)


class PlanChange(Frozen):
    """What an engine changes in the loop's walk once it is done with a hypothesis (``Engine.revise``): the
    hypotheses to walk next, before those already ahead (``follow``), and the ids of those ahead it no longer wants
    walked (``drop``). ``PlanChange()``: the walk goes on as planned."""

    follow: tuple[Hypothesis, ...] = ()
    drop: frozenset[str] = frozenset()

    def applied(self, ahead: Sequence[Hypothesis]) -> list[Hypothesis]:
        """The hypotheses ahead once the change is made: ``follow``, then those ahead not dropped."""
        return [*self.follow, *(h for h in ahead if h.id not in self.drop)]


class ReproductionRecord(Frozen):
    """A heal from a production error (``repair.reported_error``), for the report and the PR: where the error
    came from and how it was reproduced."""

    origin: str
    headline: str
    fingerprint: str
    site: str  # file:function
    test_path: str
    reproduced: bool
    attempts: tuple[str, ...] = ()  # what each of QA's tests did


class QATest(Frozen):
    """A reproduction test written for one hypothesis; it must fail on the unpatched code."""

    path: str  # relative to the sandbox's scratch test folder
    source: str
    # The hypothesis' claim over a class of inputs, as a Hypothesis-library pytest module ("" none): gated and
    # run by repair.properties.
    property_source: str = ""


class PropertyLibrary(Frozen):
    """Where a property run finds the Hypothesis library (``Sandbox.prepare_hypothesis``): the project's own
    environment (``in_project``), or a folder selfix provided (``path``, appended to ``sys.path`` by the property
    test's conftest); neither: unavailable, and ``note`` says why."""

    in_project: bool = False
    path: str = ""
    python: str = ""  # the project's Python version, e.g. "3.11"
    note: str = ""

    @property
    def available(self) -> bool:
        return self.in_project or bool(self.path)


class PropertyRecord(Frozen):
    """What the report says of one hypothesis' property test."""

    source: str
    used: bool  # gated: it found a counterexample on the unpatched code
    counterexample: str = ""  # the shrunk counterexample on the unpatched code
    note: str = ""  # why it was not used, or skipped
    held_on_patch: bool | None = None  # on the winning patch: None when no patch of this hypothesis won
    examples: int = 0  # examples it ran on the winning patch without a counterexample
    rejected: tuple[str, ...] = ()  # candidates it rejected as partial fixes


class CandidatePatch(Frozen):
    id: str
    hypothesis_id: str
    description: str
    template: str
    files: dict[str, str]  # repo-relative path -> full new text
    line: int = 0
    prior: float = 0.0
    # ast.dump of a file's new text, for engines that already have it (saves the loop a parse per candidate)
    normalized: dict[str, str] = Field(default_factory=dict)


class VerifyStage(StrEnum):
    PROTECTED = "protected_path"
    SANITY = "static_sanity"  # refused before any test ran: the patch cannot make sense (repair.sanity)
    QA = "qa_test"
    F2P = "fail_to_pass"
    P2P = "pass_to_pass"
    FULL = "full_suite"
    PROPERTY = "property_test"  # passed everything else; the hypothesis' property test found a counterexample
    OK = "verified"


class CandidateCheck(Frozen):
    """One candidate's check for ``Sandbox.check_candidates``: its whole new files and the tests to run (stopping
    at the first failure) under a wall limit (None: the sandbox's own)."""

    files: dict[str, str]
    nodeids: tuple[str, ...]
    wall_seconds: float | None = None


class Verification(Frozen):
    candidate_id: str
    ok: bool
    stage: VerifyStage
    failing_tests: tuple[str, ...] = ()
    detail: str = ""
    test_runs: int = 0
    duration: float = 0.0


class ProbeTarget(Frozen):
    """A function whose calls the behaviour probe records and replays (``Sandbox.probe_calls``)."""

    path: str  # repo-relative
    qualname: str  # ``Class.method`` or ``function``, as localization names it
    first: int  # its lines in the unpatched file (the decorators' too)
    last: int

    @property
    def id(self) -> str:
        return f"{self.path}:{self.qualname}"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


class ProbeLine(Frozen):
    """One input replayed on one version of the code, and what the call did there."""

    target: str  # ProbeTarget.id
    call: int  # which recorded call (1, 2, ...) of the target
    variation: str  # "as recorded", or what was changed: "argument 2 as a tuple"
    text: str  # the input, as text
    test: str  # the test whose run made the recorded call
    outcome: str  # "returns ...", "raises TypeError: ...", "runs past 2s", possibly "| arguments after: ..."

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.target, self.call, self.variation)


class CallProbe(Frozen):
    """The recorded calls of some functions replayed, with variations, on several versions of the code: the
    unpatched code twice ("before", "before again": what differs there is the code's own variation) and each
    patch under its label. Empty ``versions`` and a ``note`` when nothing could be recorded or replayed."""

    versions: dict[str, tuple[ProbeLine, ...]] = Field(default_factory=dict)
    recorded: int = 0  # distinct calls recorded
    unpicklable: int = 0  # calls whose arguments could not be kept
    processes: int = 0  # processes of the project's code the probe ran (its recording run and its replays)
    note: str = ""
