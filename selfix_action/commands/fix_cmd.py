"""``selfix fix``: heal a local repository and write patch.diff, report.md, report.json, trace.jsonl, view.html.

A front end only: options in, one ``HealRequest``, the ``HealOutcome`` out as lines and an exit code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, ConfigDict

from selfix_action.errors import ExitCode, InputError
from selfix_action.heal import EngineChoice, HealRequest, heal, resolve_test_cmd
from selfix_action.heal.outputs import apply_to_tree
from selfix_action.repair.loop import LoopConfig
from selfix_action.repair.report import candidate_counts
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits
from selfix_action.tracebacks import ReportedError

__all__ = ["FixOptions", "fix_request", "resolve_test_cmd", "run_fix"]


class FixOptions(BaseModel):
    """Everything ``selfix fix`` was asked to do, validated once."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    repo: Path
    junit: tuple[Path, ...] = ()
    reported_error: ReportedError | None = None  # --from-error: heal this instead of failing tests
    test_cmd: tuple[str, ...] = ()
    working_directory: str = ""  # the project's folder in the repository; "": found (heal.project)
    toolchain: str = "auto"  # python, node, or auto (heal.project.node_project decides)
    engine: EngineChoice = EngineChoice()
    out: Path | None = None
    apply: bool = False
    quiet: bool = False
    test_timeout: float = 120.0
    max_candidates: int = 500
    max_hypotheses: int = 3
    time_limit: float = 900.0
    hint: str = ""
    heal_seen_failures: bool = False  # a JUnit report whose failing tests are not here: heal what fails here
    # sandbox isolation
    isolation: str = "auto"
    require_isolation: bool = False
    allow_ports: tuple[int, ...] = ()  # the host's loopback ports test runs may connect to
    jobs: int | None = None  # candidates checked side by side; None: heal.default_jobs()
    # memory of past fixes (selfix_action.learn.memory): off unless a file is named. On the benchmark's project
    # split it changed no heal (docs/LEARNING.md, "Does learning help?"), so it is not on by default.
    memory: Path | None = None
    use_memory: bool = True


def fix_request(options: FixOptions) -> HealRequest:
    """The heal request for these options (keys and base URLs may come from this process's environment)."""
    repo = options.repo.resolve()
    out_dir = (options.out or repo / ".selfix").resolve()
    try:
        isolation = IsolationConfig(
            mode=options.isolation, require_isolation=options.require_isolation, allow_ports=options.allow_ports
        )
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    return HealRequest(
        repo=repo,
        test_cmd=options.test_cmd or resolve_test_cmd(None, repo),
        out_dir=out_dir,
        working_directory=options.working_directory,
        toolchain=options.toolchain,
        junit=options.junit,
        reported_error=options.reported_error,
        junit_strict=True,
        engine=options.engine,
        loop=LoopConfig(
            max_hypotheses=options.max_hypotheses,
            max_candidates=options.max_candidates,
            time_limit_seconds=options.time_limit,
            user_hint=options.hint,
            heal_seen_failures=options.heal_seen_failures,
        ),
        limits=Limits(wall_seconds=options.test_timeout),
        isolation=isolation,
        jobs=options.jobs,
        memory_path=options.memory if options.use_memory else None,
        repo_label=str(options.repo),
    )


def run_fix(options: FixOptions, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout  # looked up per call: tests and embedders swap sys.stdout
    err = err or sys.stderr
    request = fix_request(options)
    outcome = heal(
        request,
        progress=None if options.quiet else err,
        warn=lambda message: print(f"selfix: warning: {message}", file=err),
    )
    report = outcome.report
    if outcome.paths is None:  # nothing ran
        print(f"selfix: {report.explanation}", file=out)
        return ExitCode.NOTHING_TO_HEAL
    print(f"selfix: {report.stop_reason.value}: {report.explanation}", file=out)
    if report.junit_missing:
        print(f"selfix: {_listing('the report names failing', report.junit_missing)}, not in this checkout", file=out)
        if report.seen_failures:
            print(f"selfix: {_listing('failing here instead', report.seen_failures)}", file=out)
    if report.confidence is not None:  # the reasons that kept it from high (engine.plausibility.assess_confidence)
        lowering = "; ".join(r.text for r in report.confidence.reasons if r.level != "high")
        print(f"selfix: confidence {report.confidence.level}" + (f": {lowering}" if lowering else ""), file=out)
    if report.patch is not None and outcome.paths.patch is not None:
        print(f"\n{report.patch.diff}", file=out)
        if options.apply and outcome.healed and outcome.result.files is not None:
            apply_to_tree(request.repo, outcome.result.files, outcome.result.originals)
            print(f"selfix: applied the patch to {', '.join(report.patch.files)}", file=out)
        elif options.apply:
            # An unconfirmed patch (verified on the selected tests, never on the whole suite) is not applied.
            print(f"selfix: not applied ({report.verification}); see {outcome.paths.patch}", file=out)
        else:
            print(f"selfix: patch written to {outcome.paths.patch} (apply with `git apply` or --apply)", file=out)
    if report.usage.calls:
        print(
            f"selfix: {report.usage.calls} model calls, asks: {report.usage.asks}, {report.usage.tokens} tokens, "
            f"${report.usage.cost_usd:.4f}",
            file=out,
        )
    print(
        f"selfix: {report.test_runs} test runs, candidates {candidate_counts(report)}, "
        f"{report.timings.get('total', 0):.1f}s; report: {outcome.paths.report_md}",
        file=out,
    )
    if report.next_step:
        print(f"selfix: next step: {report.next_step}", file=out)
    return report.exit_code


def _listing(what: str, tests: tuple[str, ...], shown: int = 3) -> str:
    more = f" and {len(tests) - shown} more" if len(tests) > shown else ""
    return f"{what} {len(tests)} test(s): {', '.join(tests[:shown])}{more}"
