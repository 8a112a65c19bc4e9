"""Property tests: the hypothesis' claim over a class of inputs, as evidence from inputs the tests never tried.

Beside its example reproduction, QA may state the hypothesis as a Hypothesis-library property test ("for every
input of this shape, this holds"; ``QATest.property_source``). It is gated like the reproduction: on the unpatched
code it must find a counterexample (Hypothesis' shrunk "Falsifying example:" block, kept for the report); one that
passes there, or is broken (not collected, an error in its own code or in its use of Hypothesis), is not evidence
and is dropped with the reason. A candidate that passed every other check then runs it: a counterexample on the
patched code is a partial fix, rejected at ``VerifyStage.PROPERTY`` with the counterexample as the verdict's
detail (the Patcher reads it as feedback). One that holds on the winner is a reason for ``high``.

Runs are bounded and reproducible: a conftest.py selfix writes beside the property module loads a settings
profile of its own (``MAX_EXAMPLES``, no deadline, derandomized, no example database, a bounded shrink), and caps
any ``@settings`` of the test's own at the same number of examples. Nothing is written into the project: the
files live in the sandbox's scratch QA folder, Hypothesis' own storage in the run's temp dir.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from selfix_action.repair.paths import QA_TEST_DIR
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.values import (
    CandidatePatch,
    PropertyLibrary,
    PropertyRecord,
    TestResult,
    TestRun,
    TestStatus,
    Verification,
    VerifyStage,
)
from selfix_action.repair.verify import CONFIRM_RUNS, Trace, Verifier, noop_trace
from selfix_action.repair.verify import _incomplete_stand_in as incomplete_stand_in
from selfix_action.repair.verify import _real_failure as real_failure

MAX_EXAMPLES = 150  # per property run; the profile's and the cap on a test's own @settings
SHRINK_SECONDS = 20  # Hypothesis shrinks for up to 300 s by default: bounded here so a run stays small
COUNTEREXAMPLE_CHARS = 1200
# How Hypothesis introduces the shrunk failing input: "Falsifying example:" until 6.1xx, "Failing test case:" now.
FAILING_PREFIXES = ("Falsifying example", "Failing test case")
# Hypothesis' errors about the test itself (its strategies, its settings, its filters, a flaky outcome): a broken
# property test, never a counterexample.
HYPOTHESIS_USAGE_ERRORS = frozenset(
    {
        "InvalidArgument",
        "InvalidDefinition",
        "InvalidState",
        "FailedHealthCheck",
        "Unsatisfiable",
        "Flaky",
        "FlakyFailure",
        "FlakyStrategyDefinition",
        "FlakyReplay",
        "DeadlineExceeded",
        "ResolutionFailed",
        "HypothesisException",
        "HypothesisDeprecationWarning",
        "Frozen",
    }
)
_EXAMPLES_LINE = re.compile(r"^selfix-property-examples (\S+) (\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class GatedProperty:
    """A property test that found a counterexample on the unpatched code: it checks the candidates."""

    files: dict[str, str]  # the property module and its conftest, by path under QA_TEST_DIR
    module: str  # the property module's path (what a run selects)
    source: str
    counterexample: str


@dataclass(frozen=True)
class PropertyOutcome:
    """One property run on a candidate: ``held`` (no counterexample within the bound), with the examples it ran;
    else the counterexample or why the run said nothing (``detail``)."""

    held: bool
    detail: str = ""
    examples: int = 0


def property_folder(hypothesis_id: str) -> str:
    safe = re.sub(r"[^a-z0-9_]", "_", hypothesis_id.lower())
    return f"{QA_TEST_DIR}/property_{safe}"


def conftest_source(library: PropertyLibrary) -> str:
    """The conftest beside a property module: the library's folder on ``sys.path`` (last, after the project's
    own packages), Hypothesis' storage in the run's temp dir, the settings profile, the cap on a test's own
    settings, the shrink bound, and one summary line per test with the examples it ran."""
    append = f"sys.path.append({library.path!r})\n" if library.path and not library.in_project else ""
    return f"""\
# Written by selfix: bounded, reproducible property runs (selfix_action/repair/properties.py).
import functools
import os
import sys
import tempfile

{append}os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis"))

from hypothesis import HealthCheck, Phase, settings

_MAX = {MAX_EXAMPLES}
settings.register_profile(
    "selfix",
    max_examples=_MAX,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
    # No explain phase: it traces every line of the failing examples again (seconds), for a note selfix drops.
    phases=[phase for phase in Phase if phase.name != "explain"],
)
settings.load_profile("selfix")
try:  # the shrink's time bound is not a public setting; without it Hypothesis' own (300 s) holds
    from hypothesis.internal.conjecture import engine as _engine

    _engine.MAX_SHRINKING_SECONDS = {SHRINK_SECONDS}
except Exception:
    pass

_examples = {{}}


def _counted(nodeid, inner):
    @functools.wraps(inner)  # Hypothesis names the failing example by the test's name
    def run(*args, **kwargs):
        _examples[nodeid] = _examples.get(nodeid, 0) + 1
        return inner(*args, **kwargs)

    return run


def pytest_collection_modifyitems(items):
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None:
            try:  # a test's own @settings keeps what it says but the bound and the reproducibility
                test._hypothesis_internal_use_settings = settings(
                    own, max_examples=min(own.max_examples, _MAX), deadline=None, derandomize=True, database=None
                )
            except Exception:
                pass
        hypothesis = getattr(test, "hypothesis", None)
        if hypothesis is not None and hasattr(hypothesis, "inner_test"):
            try:
                hypothesis.inner_test = _counted(item.nodeid, hypothesis.inner_test)
            except Exception:
                pass


def pytest_terminal_summary(terminalreporter):
    for nodeid, count in sorted(_examples.items()):
        terminalreporter.write_line("selfix-property-examples %s %d" % (nodeid.replace(" ", "_"), count))
"""


def property_files(source: str, hypothesis_id: str, library: PropertyLibrary) -> tuple[str, dict[str, str]]:
    """The property module's path and the files of a property run (the module and its conftest)."""
    folder = property_folder(hypothesis_id)
    module = f"{folder}/test_property_{folder.rsplit('_', 1)[-1]}.py"
    text = source if source.endswith("\n") else source + "\n"
    return module, {f"{folder}/conftest.py": conftest_source(library), module: text}


def counterexample(result: TestResult) -> str:
    """The shrunk failing input Hypothesis reported for a failed property test ("Falsifying example:" or "Failing
    test case:"), with the error it raised ("" if none)."""
    message = result.message
    found = [at for at in (message.find(prefix) for prefix in FAILING_PREFIXES) if at >= 0]
    if not found:
        return ""
    start = min(found)
    block = message[start:].strip()
    error = message[:start].strip()
    where = f" at {result.frames[-1].file}:{result.frames[-1].line}" if result.frames else ""
    headline = f"{result.exc_type}{where}: {error.splitlines()[0][:300]}" if error else f"{result.exc_type}{where}"
    return f"{block}\n{headline}"[:COUNTEREXAMPLE_CHARS]


def examples_run(run: TestRun) -> int:
    """The examples the property tests ran, from the conftest's summary lines (0 when it printed none)."""
    return sum(int(count) for _, count in _EXAMPLES_LINE.findall(run.output_tail))


@dataclass
class PropertyGate:
    """What gating found: the gated test, or why there is none (``record.note``)."""

    gated: GatedProperty | None
    record: PropertyRecord


def gate(run: TestRun, module: str, files: Mapping[str, str], source: str) -> PropertyGate:
    """Judge the property test's run on the unpatched code: gated when it found a counterexample for a real
    reason (verify.py's rule for QA tests: an exception of the project's, or a failed check of the test's own),
    dropped when it passed, could not be collected, or failed in its own code or its use of Hypothesis."""
    results = [r for n, r in run.results.items() if n.startswith(module)]
    if not results:
        tail = " ".join(run.output_tail.strip().splitlines()[-3:])[:300]
        why = run.error.splitlines()[0] if run.error else tail or "no result"
        return _dropped(source, f"the property test could not be collected: {why}")
    failed = [r for r in results if r.status is not TestStatus.PASSED]
    for result in failed:
        if result.exc_type in HYPOTHESIS_USAGE_ERRORS:
            return _dropped(source, f"the property test is broken ({result.exc_type}: {result.message[:200]})")
        if stand_in := incomplete_stand_in(result, source):
            return _dropped(source, f"the property test is broken ({stand_in})")
        if not real_failure(result):
            where = f" at {result.frames[-1].file}:{result.frames[-1].line}" if result.frames else ""
            return _dropped(
                source,
                f"the property test is broken ({result.status.value} {result.exc_type}{where}, raised in the test "
                "itself)",
            )
    found = [text for r in failed if (text := counterexample(r))]
    if found:
        gated = GatedProperty(files=dict(files), module=module, source=source, counterexample=found[0])
        return PropertyGate(gated, PropertyRecord(source=source, used=True, counterexample=found[0]))
    if failed:
        first = failed[0]
        return _dropped(
            source,
            f"the property test failed without a counterexample ({first.status.value} {first.exc_type}): not a "
            "property of the inputs",
        )
    return _dropped(
        source, "the property test found no counterexample on the unpatched code, so it does not expose the bug"
    )


def _dropped(source: str, note: str) -> PropertyGate:
    return PropertyGate(None, PropertyRecord(source=source, used=False, note=note))


def outcome(run: TestRun, module: str) -> PropertyOutcome:
    """The property test's verdict on a patched copy: held, or the counterexample (or why it said nothing)."""
    results = [r for n, r in run.results.items() if n.startswith(module)]
    if not results:
        why = run.error.splitlines()[0] if run.error else "timed out" if run.timed_out else "no result"
        return PropertyOutcome(False, f"the property test did not run on the patch: {why}")
    failed = [r for r in results if r.status is not TestStatus.PASSED]
    if not failed:
        return PropertyOutcome(True, examples=examples_run(run))
    first = failed[0]
    found = counterexample(first)
    if found:
        return PropertyOutcome(False, f"the property test found a counterexample on the patch:\n{found}")
    message = first.message.strip().splitlines()[0][:300] if first.message.strip() else ""
    return PropertyOutcome(False, f"the property test failed on the patch: {first.exc_type} {message}".strip())


class PropertyChecks:
    """The property tests of one heal: gated per hypothesis on the unpatched code, run on the candidates that
    passed everything else, and what the report and the confidence say of them. Every run is a counted run of
    the verifier, taken only while a confirmation's runs and time stay kept back."""

    def __init__(self, verifier: Verifier, sandbox: Sandbox, trace: Trace = noop_trace) -> None:
        self.verifier = verifier
        self.sandbox = sandbox
        self.trace = trace
        self.records: dict[str, PropertyRecord] = {}  # hypothesis id -> what the report says
        self.notes: list[str] = []
        self._gated: dict[str, GatedProperty] = {}
        self._held: dict[tuple[str, frozenset[tuple[str, str]]], int] = {}  # (hypothesis, files) -> examples
        self._library: PropertyLibrary | None = None

    def _allows(self, runs: int) -> str:
        budget = self.verifier.budget
        stop = budget.allows(runs, keep_runs=CONFIRM_RUNS, keep_seconds=budget.confirm_seconds)
        return stop.why if stop is not None else ""

    def gate(self, hypothesis_id: str, source: str) -> GatedProperty | None:
        """Run the hypothesis' property test on the unpatched code; the gated test, or None (recorded why)."""
        if not source.strip():
            return None
        if self._library is None:
            self._library = self.sandbox.prepare_hypothesis()
            if not self._library.available:
                self.notes.append(f"property tests skipped: {self._library.note}")
                self.trace("property", f"property tests skipped: {self._library.note}")
        if not self._library.available:
            self._drop(hypothesis_id, source, f"skipped: {self._library.note}")
            return None
        # The gate's run, and then at least one candidate's check and its property run.
        if why := self._allows(1 + self.verifier.candidate_runs + 1):
            self._drop(hypothesis_id, source, f"skipped: {why}")
            return None
        module, files = property_files(source, hypothesis_id, self._library)
        with self.verifier.budget.timed("property"):
            run = self.verifier.run([module], extra_test_files=files)
        judged = gate(run, module, files, source)
        self.records[hypothesis_id] = judged.record
        message = (
            f"property test of {hypothesis_id} found a counterexample on the unpatched code"
            if judged.gated is not None
            else f"property test of {hypothesis_id} not used: {judged.record.note}"
        )
        self.trace(
            "property",
            message,
            hypothesis=hypothesis_id,
            used=judged.gated is not None,
            source=source,
            counterexample=judged.record.counterexample,
            note=judged.record.note,
            seconds=round(run.duration, 3),
        )
        if judged.gated is not None:
            self._gated[hypothesis_id] = judged.gated
        return judged.gated

    def _drop(self, hypothesis_id: str, source: str, note: str) -> None:
        self.records[hypothesis_id] = PropertyRecord(source=source, used=False, note=note)

    def check(self, hypothesis_id: str, candidate: CandidatePatch) -> Verification | None:
        """The gated property test on a candidate that passed everything else: a ``PROPERTY`` rejection with the
        counterexample when it finds one, else None (held, or not run: the budget)."""
        gated = self._gated.get(hypothesis_id)
        if gated is None:
            return None
        held = self.holds(hypothesis_id, candidate.files, candidate.id)
        if held is None or held.held:
            return None
        record = self.records[hypothesis_id]
        self.records[hypothesis_id] = record.model_copy(update={"rejected": (*record.rejected, candidate.id)})
        return Verification(
            candidate_id=candidate.id,
            ok=False,
            stage=VerifyStage.PROPERTY,
            failing_tests=(gated.module,),
            detail=f"{held.detail}\n(the patch passes the failing tests and the reproduction test but not the "
            "hypothesis' property: a partial fix)",
            test_runs=1,
        )

    def holds(self, hypothesis_id: str, files: Mapping[str, str], candidate_id: str = "") -> PropertyOutcome | None:
        """The gated property test on ``files`` (None: no gated test, or no room in the budget to run it)."""
        gated = self._gated.get(hypothesis_id)
        if gated is None:
            return None
        key = (hypothesis_id, frozenset(files.items()))
        if key in self._held:
            return PropertyOutcome(True, examples=self._held[key])
        if why := self._allows(1):
            self.notes.append(f"the property test of {hypothesis_id} was not run on a candidate: {why}")
            return None
        with self.verifier.budget.timed("property"), self.sandbox.patched(files):
            run = self.verifier.run([gated.module], extra_test_files=gated.files)
        result = outcome(run, gated.module)
        self.trace(
            "property",
            f"property test of {hypothesis_id} {'held' if result.held else 'failed'} on a candidate",
            hypothesis=hypothesis_id,
            candidate=candidate_id,
            held=result.held,
            examples=result.examples,
            detail=result.detail,
            seconds=round(run.duration, 3),
        )
        if result.held:
            self._held[key] = result.examples
        return result

    def keeps(self, hypothesis_id: str) -> Callable[[Mapping[str, str]], bool] | None:
        """For minimization: a reduced patch is kept only if the property still holds on it (None: no test)."""
        if hypothesis_id not in self._gated:
            return None

        def keep(files: Mapping[str, str]) -> bool:
            held = self.holds(hypothesis_id, files, "a minimized patch")
            return held is not None and held.held

        return keep

    def settle(self, hypothesis_id: str, files: Mapping[str, str]) -> str:
        """Record what the property test said of the winning patch; the confidence's evidence ("" when it did not
        hold there or was not run)."""
        record = self.records.get(hypothesis_id)
        if record is None or not record.used:
            return ""
        key = (hypothesis_id, frozenset(files.items()))
        examples = self._held.get(key)
        if examples is None:  # the budget left no room to run it on the patch
            note = "not run on the winning patch (time or test-run budget)"
            self.records[hypothesis_id] = record.model_copy(update={"note": note})
            return ""
        self.records[hypothesis_id] = record.model_copy(update={"held_on_patch": True, "examples": examples})
        counted = f"{examples} generated example(s)" if examples else "every generated example"
        return (
            f"the hypothesis' property test found a counterexample on the unpatched code and none on the patch "
            f"in {counted}"
        )
