"""One heal of one repository: sandbox (with the best isolation available) + healing loop + engine.

Shared by ``selfix fix`` and ``selfix action`` so both run code under the same boundary and report it alike.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from selfix_action.engine.loop import HealingLoop, HealResult, LoopConfig
from selfix_action.engine.protocols import Engine
from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox


def default_jobs() -> int:
    """Candidates checked side by side by default: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


def heal_repository(
    repo: Path,
    test_cmd: Sequence[str],
    engine: Engine,
    config: LoopConfig,
    *,
    limits: Limits,
    isolation: Isolation,
    parallel_checks: int | None = None,
    env_source: Mapping[str, str] | None = None,
    trace: Callable[..., None] | None = None,
    repo_label: str = ".",
    junit_failing: Sequence[str] = (),
    junit_passing: Sequence[str] = (),
) -> HealResult:
    """Heal ``repo`` on a scratch copy; the report says which isolation every test run had."""
    if trace is not None:
        trace("sandbox", isolation.summary(), isolation=isolation.report())
    jobs = parallel_checks or default_jobs()
    with PytestSandbox(
        repo, test_cmd, limits=limits, env_source=env_source, isolation=isolation, parallel_checks=jobs
    ) as sandbox:
        kwargs = {"trace": trace} if trace is not None else {}
        result = HealingLoop(sandbox, engine, config, repo_label=repo_label, **kwargs).run(junit_failing, junit_passing)
        process_runs = {
            "hot": sandbox.hot_runs,
            "warm": sandbox.warm_runs - sandbox.hot_runs,
            "cold": sandbox.runs - sandbox.warm_runs,
        }
    notes = result.report.notes
    if isolation.warnings:
        notes = (*notes, isolation.summary())
    report = result.report.model_copy(
        update={"isolation": isolation.report(), "notes": notes, "process_runs": process_runs}
    )
    return dataclasses.replace(result, report=report)
