"""Reproduce and localize: which tests fail here (every time), and where the bug probably is.

Both are public so that benchmarks gather evidence exactly as the healing loop does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from selfix_action.repair.fingerprint import failure_signature
from selfix_action.repair.localize import localize
from selfix_action.repair.paths import QA_TEST_DIR
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import StopReason
from selfix_action.repair.reported import ReportedTest, resolve_reported
from selfix_action.repair.values import Evidence, TestResult, TestRun, TestStatus
from selfix_action.repair.verify import Stop, Trace, Verifier, noop_trace

MAX_TRACED_FAILURES = 10  # failing tests written to the trace's localize event (evidence, fingerprints)


@dataclass(frozen=True)
class Reproduction:
    """The baseline run and what it showed; ``stop`` says why reproduction could not finish (then ``f2p`` is
    empty and nothing about flakiness was decided)."""

    baseline: TestRun
    f2p: tuple[str, ...] = ()  # failing here every time
    p2p: tuple[str, ...] = ()  # passing here (and in the CI report, when one is given)
    flaky: tuple[str, ...] = ()  # failed once, then passed when re-run
    # Killed by the test-run limit on the unpatched code: a hang, never a test to heal; left out of later runs.
    hung: tuple[str, ...] = ()
    # Passed in the CI report but failed here: the sandbox's doing (a different environment), never a failure to
    # heal, so neither F2P nor P2P; reported with the failure the sandbox saw.
    sandbox_failures: tuple[TestResult, ...] = ()
    notes: tuple[str, ...] = ()
    stop: Stop | None = None
    # The CI report's failing tests this checkout does not have, and the tests failing here it does not name.
    junit_missing: tuple[str, ...] = ()
    seen_failures: tuple[str, ...] = ()

    @property
    def tests_before(self) -> dict[str, str]:
        return {n: r.status.value for n, r in self.baseline.results.items()}


def _reported(tests: Sequence[str | ReportedTest]) -> list[ReportedTest]:
    return [t if isinstance(t, ReportedTest) else ReportedTest.from_nodeid(t) for t in tests]


def reproduce(
    verifier: Verifier,
    reported_failing: Sequence[str | ReportedTest] = (),
    reported_passing: Sequence[str | ReportedTest] = (),
    *,
    trace: Trace = noop_trace,
    heal_seen_failures: bool = False,
) -> Reproduction:
    """Baseline run of the suite with coverage, and re-runs of the failing tests to weed out flakes.

    The report's tests (``ReportedTest``, or node ids) are resolved to the tests the baseline collected
    (``repair.reported``): whatever the project's naming, the node id comes from this checkout. A CI report none of
    whose failing tests is here stops with ``REPORT_MISMATCH`` (it is another checkout's, or another project's),
    naming each case and why it did not resolve, unless ``heal_seen_failures``: then the tests failing here are
    healed, as without a report.

    A failing test is flaky only if a re-run ran it and it passed. A re-run that gave no result for it (the
    sandbox crashed, pytest refused the arguments or collected nothing) stops with ``SANDBOX_ERROR``. Raises
    SandboxError when the suite cannot run at all (the test command is unusable: bad input)."""
    budget = verifier.budget
    if (stop := budget.allows(1)) is not None:
        return Reproduction(TestRun(), stop=Stop(stop.reason, f"{stop.why} reached before the baseline run"))
    trace("reproduce", "running the test suite with per-test coverage")
    baseline = verifier.baseline()
    notes: list[str] = []
    hung = tuple(
        n for n, r in baseline.results.items() if r.status is TestStatus.TIMEOUT and not n.startswith(QA_TEST_DIR)
    )
    if hung:
        # A test that never ends is no test to heal: a fix of the real bug would be rejected for it ("did not run
        # (timed out)"), and every later run would wait for it again.
        verifier.left_out = frozenset(hung)
        notes.append(
            f"{len(hung)} test(s) hung on the unpatched code and were killed at the test-run time limit (first: "
            f"{hung[0]}, {baseline.results[hung[0]].message}): left out of every later run, never a test to heal"
        )
    failing = [n for n in baseline.failing() if not n.startswith(QA_TEST_DIR) and n not in hung]
    missing: tuple[str, ...] = ()
    seen: tuple[str, ...] = ()
    resolved_failing = resolve_reported(_reported(reported_failing), baseline.results)
    junit_failing: Sequence[str] = resolved_failing.nodeids
    junit_passing: Sequence[str] = resolve_reported(_reported(reported_passing), baseline.results).nodeids
    if reported_failing:
        # The CI report names the failures; tests it names that pass here are re-run below like any other.
        missing = resolved_failing.missing()
        ci_failed = set(junit_failing)
        seen = tuple(n for n in failing if n not in ci_failed and n not in set(junit_passing))
        found = [n for n in junit_failing if n in baseline.results and n not in hung]
        if missing and not found:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            here = f"{len(seen)} test(s) fail here instead (first: {seen[0]})" if seen else "no test fails here"
            if not heal_seen_failures or not seen:
                detail = f"the report's {len(missing)} failing test(s) are not in this checkout ({shown}); {here}"
                stop = Stop(StopReason.REPORT_MISMATCH, detail)
                return Reproduction(baseline, hung=hung, stop=stop, junit_missing=missing, seen_failures=seen)
            notes.append(
                f"the report's {len(missing)} failing test(s) are not in this checkout ({shown}); healing the "
                f"{len(seen)} failing here instead, as asked"
            )
            found, junit_passing = list(seen), ()  # as without a report: its passing tests are another tree's
        elif missing:
            notes.append(f"{len(missing)} failing test(s) from the report were not found here (first: {missing[0]})")
        failing = found
    ci_passed = set(junit_passing)
    passing = tuple(n for n in baseline.passing() if not ci_passed or n in ci_passed)
    sandbox_failures = tuple(baseline.results[n] for n in baseline.failing() if n in ci_passed)
    if sandbox_failures:
        notes.append(
            f"{len(sandbox_failures)} test(s) that passed in the CI report failed in the sandbox (first: "
            f"{sandbox_failures[0].nodeid}): left out of the tests to heal and of the passing tests"
        )
    # What reproduction found before the re-runs; each way out below adds to it.
    found_so_far = Reproduction(
        baseline,
        p2p=passing,
        hung=hung,
        notes=tuple(notes),
        sandbox_failures=sandbox_failures,
        junit_missing=missing,
        seen_failures=seen,
    )
    if not failing:
        return found_so_far
    trace("reproduce", f"re-running {len(failing)} failing test(s) to check they fail every time")
    reproducible = set(failing)
    for attempt in range(1, (2 if reported_failing else 1) + 1):
        if (stop := budget.allows(1)) is not None:
            detail = f"{stop.why} reached before re-run {attempt} of the {len(failing)} failing test(s)"
            return replace(found_so_far, stop=Stop(stop.reason, detail))
        rerun = verifier.run(failing)
        unrun = [n for n in failing if n not in rerun.results]
        if unrun:
            why = rerun.error or rerun.output_tail or "no result and no error"
            detail = (
                f"re-run {attempt} of the {len(failing)} failing test(s) gave no result for {len(unrun)} of them "
                f"(first: {unrun[0]}), so they cannot be called flaky: {why.strip()[-1500:]}"
            )
            return replace(found_so_far, stop=Stop(StopReason.SANDBOX_ERROR, detail))
        reproducible &= set(rerun.failing())
    flaky = tuple(n for n in failing if n not in reproducible)
    if flaky:
        notes.append(f"{len(flaky)} failing test(s) passed on a re-run and were left out as flaky")
    f2p = tuple(n for n in failing if n in reproducible)
    return replace(found_so_far, f2p=f2p, flaky=flaky, notes=tuple(notes))


def gather_evidence(
    sandbox: Sandbox, reproduction: Reproduction, *, user_hint: str = "", trace: Trace = noop_trace
) -> Evidence:
    """Rank suspicious lines and functions from the baseline's coverage spectra and the failing tracebacks."""
    baseline, f2p, p2p = reproduction.baseline, reproduction.f2p, reproduction.p2p
    sources = {path: sandbox.read_file(path) for path in sandbox.source_files()}
    failures = tuple(baseline.results[n] for n in f2p)
    test_sources = {}
    for path in {n.split("::")[0] for n in f2p}:
        try:
            test_sources[path] = sandbox.read_file(path)
        except OSError:
            continue
    found = localize(failures, p2p, baseline.coverage, sources, test_sources)
    note = found.note
    if found.coverage_used and baseline.coverage_collector:
        # which collector measured it: coverage.py from the project's environment, or selfix's own line collector
        note = f"{note}, measured by {baseline.coverage_collector}"
    if not found.coverage_used and baseline.coverage_note:
        note = f"{note} ({baseline.coverage_note})"
    covering: dict[str, dict[int, set[str]]] = {}
    for test in p2p:
        for path, lines in (baseline.coverage or {}).get(test, {}).items():
            for line in lines:
                covering.setdefault(path, {}).setdefault(line, set()).add(test)
    top = ", ".join(f"{s.file}:{s.line} ({s.score:.2f})" for s in found.lines[:5])
    signatures = [failure_signature(f) for f in failures[:MAX_TRACED_FAILURES]]
    trace(
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
        user_hint=user_hint,
        pytest_plugins=baseline.pytest_plugins,
        root_fixtures=baseline.root_fixtures,
        python_version=baseline.python_version,
        toolchain=baseline.toolchain,
        covering_tests={p: {ln: tuple(sorted(t)) for ln, t in lines.items()} for p, lines in covering.items()},
    )


def _traced_failure(result: TestResult) -> dict[str, Any]:
    """A failing test for the trace, its message clipped so one huge assertion does not bloat it."""
    data = result.model_dump()
    data["message"] = result.message[:2000]
    return data
