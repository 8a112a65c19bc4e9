"""``selfix action``: the GitHub Action's entry point (the Docker image runs ``selfix action``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

from selfix_action.action.publish import Log, _escape_data, clean, stop_commands, write_outputs, write_summary
from selfix_action.action.runner import ActionOutcome, ActionRunner, Healer
from selfix_action.action.settings import load_settings
from selfix_action.errors import SelfixError


def run_action(
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    healer: Healer | None = None,
) -> int:
    """Run the action once. Exit 0 for every handled outcome (the status output says which); 1 on error,
    so a broken setup is visible without turning every unhealed failure into a second red job."""
    import sys

    env = dict(os.environ if env is None else env)
    out = out or sys.stdout
    err = err or sys.stderr
    log = Log(out)
    try:
        settings = load_settings(env)
    except SelfixError as exc:
        print(f"::error title=selfix::{exc}", file=out)
        print(f"selfix: error: {exc}", file=err)
        output_path = env.get("GITHUB_OUTPUT")
        from pathlib import Path

        write_outputs(Path(output_path) if output_path else None, ActionOutcome("error").outputs(), out)
        return 2
    try:
        outcome = ActionRunner(settings, env, log, healer=healer).run()
        code = 0
    except SelfixError as exc:
        # The annotation carries only the first line (ours); the rest may quote test output: fenced below.
        first = clean(str(exc).split("\n", 1)[0], 300)
        log.line(f"::error title=selfix::{_escape_data(first)}")
        print(stop_commands(f"selfix: error: {exc}"), file=err)  # may quote test output
        outcome = ActionOutcome("error", notes=[str(exc)])
        write_summary(settings.summary_path, f"# selfix: error\n\n{exc}\n")
        code = 1
    write_outputs(settings.output_path, outcome.outputs(), out)
    log.line(f"selfix: {outcome.status}" + (f" {outcome.pr_url}" if outcome.pr_url else ""))
    return code
