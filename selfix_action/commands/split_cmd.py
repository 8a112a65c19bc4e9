"""``selfix heal`` and ``selfix publish BUNDLE``: the action split across a read-only and a write job."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from selfix_action.action.publish import Log
from selfix_action.action.runner import ActionOutcome, Healer
from selfix_action.action.settings import Settings
from selfix_action.action.split import HealOnlyRunner, PublishRunner
from selfix_action.commands.action_cmd import run_guarded


def default_bundle_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("RUNNER_TEMP") or ".") / "selfix-bundle"


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

    return run_guarded(env, out, err, work)


def run_publish(
    bundle_dir: Path,
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The write job: verify the bundle, then push and comment. Exit 1 when the bundle is refused."""

    def work(settings: Settings, env: dict[str, str], log: Log) -> ActionOutcome:
        return PublishRunner(settings, env, log).publish_bundle(bundle_dir)

    return run_guarded(env, out, err, work)
