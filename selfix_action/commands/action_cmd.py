"""``selfix action``: the GitHub Action's entry point (the Docker image runs ``selfix action``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

from selfix_action.action.harness import run_guarded
from selfix_action.action.runner import ActionSteps, run_action_steps
from selfix_action.heal import Healer


def run_action(
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    healer: Healer | None = None,
) -> int:
    """Run the action once; ``healer`` replaces the sandbox-and-loop step (tests)."""
    return run_guarded(
        env, out, err, lambda settings, env, log: run_action_steps(ActionSteps(settings, env, log, healer=healer))
    )
