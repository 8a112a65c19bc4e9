"""Settings for ``selfix action``, built once from the runner environment and ``.github/selfix.yml``.

``load_settings(env)`` is the only place that reads ``INPUT_*`` and ``GITHUB_*`` variables: the options through
``ci.settings.load_options`` (what every front end shares), the runner's context into GitHub's own fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import field_validator

from selfix_action.ci.settings import INPUT_DEFAULTS, OptionSettings, load_options

__all__ = ["INPUT_DEFAULTS", "Settings", "load_settings", "read_inputs"]


class Settings(OptionSettings):
    """Everything one action run may depend on: the options, and the runner's GitHub context."""

    # runner context
    event_name: str = ""
    event_path: Path | None = None
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    run_id: int | None = None
    run_attempt: int = 1
    sha: str = ""
    ref_name: str = ""
    head_ref: str = ""  # pull_request events: the PR's head branch
    output_path: Path | None = None
    summary_path: Path | None = None
    temp_dir: Path | None = None
    # GitHub asks for >= 1 s between writes; tests against a local fake API set SELFIX_API_WRITE_INTERVAL=0.
    api_write_interval: float = 1.0
    api_max_rate_limit_wait: float = 90.0
    api_backoff: float = 0.5

    @field_validator("repository")
    @classmethod
    def _repo_shape(cls, value: str) -> str:
        if value and (value.count("/") != 1 or any(not part for part in value.split("/"))):
            raise ValueError(f"GITHUB_REPOSITORY must be owner/name, got {value!r}")
        return value

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def run_url(self) -> str:
        if not self.run_id:
            return ""
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"


def read_inputs(env: Mapping[str, str]) -> dict[str, str]:
    """The non-empty ``INPUT_<NAME>`` values for the declared inputs (the runner upper-cases input ids), by
    option name."""
    found = {}
    for name in INPUT_DEFAULTS:
        value = env.get(f"INPUT_{name.upper()}", "").strip()
        if value:
            found[name] = value
    return found


def _path(env: Mapping[str, str], name: str) -> Path | None:
    return Path(env[name]) if env.get(name) else None


def load_settings(env: Mapping[str, str]) -> Settings:
    """Build the run's settings from the environment (and the config file it points at). Pure apart from
    reading that one file."""
    run_id = env.get("GITHUB_RUN_ID", "")
    context: dict[str, Any] = {
        "event_name": env.get("GITHUB_EVENT_NAME", ""),
        "event_path": _path(env, "GITHUB_EVENT_PATH"),
        "repository": env.get("GITHUB_REPOSITORY", ""),
        "api_url": env.get("GITHUB_API_URL") or "https://api.github.com",
        "server_url": env.get("GITHUB_SERVER_URL") or "https://github.com",
        "run_id": int(run_id) if run_id.isdigit() else None,
        "run_attempt": int(env["GITHUB_RUN_ATTEMPT"]) if env.get("GITHUB_RUN_ATTEMPT", "").isdigit() else 1,
        "sha": env.get("GITHUB_SHA", ""),
        "ref_name": env.get("GITHUB_REF_NAME", ""),
        "head_ref": env.get("GITHUB_HEAD_REF", ""),
        "output_path": _path(env, "GITHUB_OUTPUT"),
        "summary_path": _path(env, "GITHUB_STEP_SUMMARY"),
        "temp_dir": _path(env, "RUNNER_TEMP"),
    }
    for key, var in (
        ("api_write_interval", "SELFIX_API_WRITE_INTERVAL"),
        ("api_max_rate_limit_wait", "SELFIX_API_MAX_WAIT"),
        ("api_backoff", "SELFIX_API_BACKOFF"),
    ):
        if env.get(var):
            context[key] = env[var]
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    return load_options(read_inputs(env), Settings, workspace=workspace, context=context, what="action input")
