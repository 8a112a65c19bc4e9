"""``selfix heal`` and ``selfix publish BUNDLE``: the action split across a read-only and a write job."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from selfix_action.action.harness import run_guarded
from selfix_action.action.runner import ActionSteps
from selfix_action.action.split import heal_to_bundle, publish_bundle
from selfix_action.heal import Healer


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
    return run_guarded(
        env,
        out,
        err,
        lambda settings, env, log: heal_to_bundle(
            ActionSteps(settings, env, log, healer=healer), bundle_dir or default_bundle_dir(env)
        ),
    )


def run_publish(
    bundle_dir: Path,
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The write job: verify the bundle, then push and comment. Exit 1 when the bundle is refused."""
    return run_guarded(
        env, out, err, lambda settings, env, log: publish_bundle(ActionSteps(settings, env, log), bundle_dir)
    )
