"""``selfix heal`` and ``selfix publish BUNDLE``: the action split across a read-only and a write job."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from selfix_action.action.publish import Log, _escape_data, clean, stop_commands, write_outputs, write_summary
from selfix_action.action.runner import ActionOutcome, Healer
from selfix_action.action.settings import Settings, load_settings
from selfix_action.action.split import HealOnlyRunner, PublishRunner
from selfix_action.errors import SelfixError


def default_bundle_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("RUNNER_TEMP") or ".") / "selfix-bundle"


def _run(
    env: Mapping[str, str] | None,
    out: TextIO | None,
    err: TextIO | None,
    work: Callable[[Settings, dict[str, str], Log], ActionOutcome],
) -> int:
    env = dict(os.environ if env is None else env)
    out = out or sys.stdout
    err = err or sys.stderr
    log = Log(out)
    try:
        settings = load_settings(env)
    except SelfixError as exc:
        print(f"::error title=selfix::{_escape_data(clean(str(exc), 500))}", file=out)
        output_path = env.get("GITHUB_OUTPUT")
        write_outputs(Path(output_path) if output_path else None, ActionOutcome("error").outputs(), out)
        return 2
    try:
        outcome = work(settings, env, log)
        code = 0
    except SelfixError as exc:
        first = clean(str(exc).split("\n", 1)[0], 300)
        log.line(f"::error title=selfix::{_escape_data(first)}")
        print(stop_commands(f"selfix: error: {exc}"), file=err)  # may quote test output
        outcome = ActionOutcome("error", notes=[str(exc)])
        write_summary(settings.summary_path, f"# selfix: error\n\n{clean(str(exc), 2000)}\n")
        code = 1
    write_outputs(settings.output_path, outcome.outputs(), out)
    log.line(f"selfix: {outcome.status}" + (f" {outcome.pr_url}" if outcome.pr_url else ""))
    return code


def run_heal(
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    bundle_dir: Path | None = None,
    healer: Healer | None = None,
) -> int:
    """The read-only job: heal and write the bundle; never pushes or comments. Exit 0 for handled outcomes."""

    def work(settings: Settings, env: dict[str, str], log: Log) -> ActionOutcome:
        target = bundle_dir or default_bundle_dir(env)
        return HealOnlyRunner(settings, env, log, healer=healer, bundle_dir=target).run()

    return _run(env, out, err, work)


def run_publish(
    bundle_dir: Path,
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The write job: verify the bundle, then push and comment. Exit 1 when the bundle is refused."""

    def work(settings: Settings, env: dict[str, str], log: Log) -> ActionOutcome:
        return PublishRunner(settings, env, log).publish_bundle(bundle_dir)

    return _run(env, out, err, work)
