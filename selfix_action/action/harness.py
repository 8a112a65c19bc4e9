"""One error harness for every action entry point (``selfix action``, ``selfix heal``, ``selfix publish``):
settings from the environment, the work, then the step outputs, whatever happened."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from selfix_action.action.log import Log, escape_data, stop_commands, write_outputs, write_summary
from selfix_action.action.runner import ActionOutcome
from selfix_action.action.settings import Settings, load_settings
from selfix_action.errors import SelfixError
from selfix_action.publish.render import clean

Work = Callable[[Settings, dict[str, str], Log], ActionOutcome]


def run_guarded(env: Mapping[str, str] | None, out: TextIO | None, err: TextIO | None, work: Work) -> int:
    """Exit 0 for every handled outcome (the status output says which), 1 on error, 2 on invalid settings or
    outside a GitHub Actions job, so a broken setup is visible without turning every unhealed failure into a second
    red job."""
    env = dict(os.environ if env is None else env)
    out = out or sys.stdout
    err = err or sys.stderr
    log = Log(out)
    if env.get("GITHUB_ACTIONS") != "true":  # the runner always sets it; without it there is no event to act on
        print(
            "selfix: error: this command runs inside a GitHub Actions job (GITHUB_ACTIONS is not 'true'); "
            "to heal a local checkout, run `selfix fix`",
            file=err,
        )
        return 2
    try:
        settings = load_settings(env)
    except SelfixError as exc:
        print(f"::error title=selfix::{escape_data(clean(str(exc), 500))}", file=out)
        print(stop_commands(f"selfix: error: {exc}"), file=err)
        output_path = env.get("GITHUB_OUTPUT")
        write_outputs(Path(output_path) if output_path else None, ActionOutcome("error").outputs(), out)
        return 2
    try:
        outcome = work(settings, env, log)
        code = 0
    except SelfixError as exc:
        # The annotation carries only the first line (ours); the rest may quote test output: fenced below.
        first = clean(str(exc).split("\n", 1)[0], 300)
        log.line(f"::error title=selfix::{escape_data(first)}")
        print(stop_commands(f"selfix: error: {exc}"), file=err)  # may quote test output
        outcome = ActionOutcome("error", notes=[str(exc)])
        write_summary(settings.summary_path, f"# selfix: error\n\n{clean(str(exc), 2000)}\n")
        code = 1
    write_outputs(settings.output_path, outcome.outputs(), out)
    log.line(f"selfix: {outcome.status}" + (f" {outcome.pr_url}" if outcome.pr_url else ""))
    return code
