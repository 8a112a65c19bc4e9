"""``selfix gitlab``: the GitLab CI front end's entry point (a job after the tests, ``when: on_failure``).

Exit codes like ``selfix action``: 0 for every handled outcome (``SELFIX_STATUS`` in the dotenv report says which),
1 on an error while healing or publishing, 2 on invalid settings or outside a GitLab CI job."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TextIO

from selfix_action.errors import ExitCode, SelfixError
from selfix_action.gitlab_ci.runner import GitLabOutcome, GitLabRun
from selfix_action.gitlab_ci.settings import GitLabSettings, load_gitlab_settings
from selfix_action.heal import Healer
from selfix_action.publish.render import clean


def _write_dotenv(settings: GitLabSettings, outcome: GitLabOutcome, err: TextIO) -> None:
    path = settings.output_path
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(outcome.dotenv(), encoding="utf-8")
    except OSError as exc:
        print(f"selfix: warning: cannot write {path}: {exc}", file=err)


def run_gitlab(
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    healer: Healer | None = None,
) -> int:
    """Run once in a GitLab CI job; ``healer`` replaces the sandbox-and-loop step (tests)."""
    env = dict(os.environ if env is None else env)
    out = out or sys.stdout
    err = err or sys.stderr
    if env.get("GITLAB_CI") != "true":  # the runner always sets it
        print(
            "selfix: error: this command runs inside a GitLab CI job (GITLAB_CI is not 'true'); "
            "to heal a local checkout, run `selfix fix`",
            file=err,
        )
        return int(ExitCode.BAD_INPUT)
    try:
        settings = load_gitlab_settings(env)
    except SelfixError as exc:
        print(f"selfix: error: {clean(str(exc), 2000)}", file=err)
        return int(ExitCode.BAD_INPUT)
    try:
        outcome = GitLabRun(settings, env, out, healer=healer).run()
        code = 0
    except SelfixError as exc:
        print(f"selfix: error: {clean(str(exc), 2000)}", file=err)
        outcome = GitLabOutcome("error", notes=[str(exc)])
        code = 1
    _write_dotenv(settings, outcome, err)
    print(f"selfix: {outcome.status}" + (f" {outcome.mr_url}" if outcome.mr_url else ""), file=out)
    return code
