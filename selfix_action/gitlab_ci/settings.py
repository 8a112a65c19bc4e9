"""Settings for ``selfix gitlab``, built once from the job's environment into a frozen value.

Every option of ``selfix_action/options.py`` is read from a ``SELFIX_<NAME>`` CI/CD variable (the name derived from
the table, e.g. ``SELFIX_ENGINE``, ``SELFIX_TIMEOUT_MINUTES``) and validated like every front end's options
(``ci.settings.load_options``);
the GitLab context comes from the predefined ``CI_*`` variables; the API token from ``SELFIX_GITLAB_TOKEN`` (a
masked, protected CI/CD variable: a project access token with ``api`` and ``write_repository``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError, field_validator

from selfix_action.ci.settings import OptionSettings, load_options
from selfix_action.errors import InputError
from selfix_action.options import OPTIONS

TOKEN_VARIABLE = "SELFIX_GITLAB_TOKEN"
# Options that mean nothing in a GitLab job: the GitHub token, the GitHub artifact's name, who may comment
# `/selfix` (GitLab has no such trigger) and GitHub's workflow dispatch on the fix branch (GitLab starts a
# pipeline for a pushed branch by itself).
NOT_ON_GITLAB = frozenset({"github_token", "junit_artifact", "allowed_users", "allowed_bots", "ci_on_fix_branch"})
GITLAB_OPTIONS = tuple(o for o in OPTIONS if o.name not in NOT_ON_GITLAB)
DEFAULT_OUTPUT_FILE = ".selfix/selfix.env"
# The next-step advice (heal.next_step) in the job's CI/CD variables; "" for what the job does not offer (a hint:
# GitLab has no `/selfix` comment).
GITLAB_OPTIONS_ADVICE = {
    "engine_auto": "`SELFIX_ENGINE: auto` with `SELFIX_ANTHROPIC_API_KEY` (or `SELFIX_OPENAI_API_KEY`) as a masked "
    "CI/CD variable",
    "local_server": (
        "`SELFIX_ENGINE: auto` with `SELFIX_OPENAI_BASE_URL` and `SELFIX_OPENAI_API_KEY` of an OpenAI-compatible "
        "server the runner reaches, `SELFIX_MODEL`, and `SELFIX_PRICE_PER_MTOK_IN: 0` with "
        "`SELFIX_PRICE_PER_MTOK_OUT: 0` (a free server)"
    ),
    "max_candidates": "`SELFIX_MAX_CANDIDATES: {value:g}`",
    "time_limit": "`SELFIX_TIMEOUT_MINUTES: {minutes:g}`",
    "hypotheses": "`SELFIX_MAX_ATTEMPTS: {value:g}`",
    "samples": "`SELFIX_SAMPLES: 2`",
    "model": "`SELFIX_MODEL`",
    "hint": "",
    "max_calls": "`SELFIX_MAX_CALLS: {value:g}`",
    "max_tokens": "`SELFIX_MAX_TOKENS: {value:g}`",
    "max_cost": "`SELFIX_MAX_COST_USD: {value:g}`",
    "test_timeout": "`SELFIX_TEST_TIMEOUT: {seconds:g}`",
    "isolation_none": "`SELFIX_ISOLATION: none` (only for a project you trust)",
    "test_command": "`SELFIX_TEST_COMMAND`",
    "dependencies": "install the project's dependencies with `SELFIX_SETUP_COMMAND` (e.g. `pip install -e .[test]`)",
    "junit": "`SELFIX_JUNIT_PATHS` pointing at this commit's reports (the test job's artifact, through `needs`)",
    "heal_seen_failures": "`SELFIX_HEAL_SEEN_FAILURES: true`",
    "working_directory": "`SELFIX_WORKING_DIRECTORY: <the folder your test job runs pytest in>`",
    "llm_setup": "`SELFIX_ANTHROPIC_API_KEY` or `SELFIX_OPENAI_API_KEY`, `SELFIX_ANTHROPIC_BASE_URL` or "
    "`SELFIX_OPENAI_BASE_URL` and `SELFIX_MODEL`",
}  # a dotenv report of the job (artifacts: reports: dotenv)


def variable(name: str) -> str:
    """The CI/CD variable that sets option ``name``."""
    return f"SELFIX_{name.upper()}"


class GitLabOptions(OptionSettings):
    """The options table's values; the pipeline's page is the run link of the MR body and the notes."""

    pipeline_url: str = ""

    @property
    def run_url(self) -> str:
        return self.pipeline_url


class GitLabSettings(BaseModel):
    """Everything one ``selfix gitlab`` run may depend on, validated once and frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    options: GitLabOptions
    token: SecretStr = SecretStr("")
    server_url: str
    project_id: int
    project_path: str
    workspace: Path
    sha: str
    ref_name: str
    default_branch: str = ""
    commit_tag: str = ""
    commit_author: str = ""
    pipeline_id: int | None = None
    pipeline_source: str = ""
    mr_iid: int | None = None
    mr_source_branch: str = ""
    mr_source_branch_sha: str = ""
    mr_source_project_id: int | None = None
    mr_project_id: int | None = None
    push_url: str  # where the fix branch is pushed: the project's HTTPS URL, no credential in it
    output_path: Path | None = None
    max_retries: int = 3  # python-gitlab's retries (5xx, connection errors, 429) per call

    @field_validator("push_url")
    @classmethod
    def _no_credential_in_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.username or parts.password:
            raise ValueError("the push URL must not carry a credential (the token goes in a header, per command)")
        return value

    @property
    def failing_branch(self) -> str:
        """The branch whose pipeline failed: a merge request's source branch, else the pipeline's ref."""
        return self.mr_source_branch or self.ref_name

    @property
    def fork(self) -> bool:
        """A merge request from another project (a fork): its pipeline must not hold a write token."""
        return self.mr_iid is not None and self.mr_source_project_id not in (None, self.mr_project_id)


def _int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise InputError(f"{name} must be a number, got {value!r}")
    return int(value)


def option_values(env: Mapping[str, str]) -> dict[str, str]:
    """The options' non-empty ``SELFIX_<NAME>`` variables, by option name."""
    return {
        option.name: env[variable(option.name)]
        for option in GITLAB_OPTIONS
        if env.get(variable(option.name), "").strip()
    }


def load_gitlab_settings(env: Mapping[str, str]) -> GitLabSettings:
    """The run's settings from the job's environment (and the config file it may name). Pure apart from reading
    that one file."""
    for name in ("CI_PROJECT_ID", "CI_SERVER_URL", "CI_PROJECT_PATH", "CI_COMMIT_SHA"):
        if not env.get(name, "").strip():
            raise InputError(f"{name} is not set: `selfix gitlab` runs in a GitLab CI job")
    workspace = env.get("CI_PROJECT_DIR") or "."
    project_id = _int(env, "CI_PROJECT_ID")
    server_url = env["CI_SERVER_URL"].rstrip("/")
    project_path = env["CI_PROJECT_PATH"].strip("/")
    options = load_options(
        option_values(env),
        GitLabOptions,
        workspace=Path(workspace),
        context={"pipeline_url": env.get("CI_PIPELINE_URL", "")},
        what="CI/CD variable",
    )
    output = env.get("SELFIX_OUTPUT_FILE") or DEFAULT_OUTPUT_FILE
    values: dict[str, Any] = {
        "options": options,
        "token": env.get(TOKEN_VARIABLE, ""),
        "server_url": server_url,
        "project_id": project_id,
        "project_path": project_path,
        "workspace": Path(workspace),
        "sha": env["CI_COMMIT_SHA"],
        "ref_name": env.get("CI_COMMIT_REF_NAME", ""),
        "default_branch": env.get("CI_DEFAULT_BRANCH", ""),
        "commit_tag": env.get("CI_COMMIT_TAG", ""),
        "commit_author": env.get("CI_COMMIT_AUTHOR", ""),
        "pipeline_id": _int(env, "CI_PIPELINE_ID"),
        "pipeline_source": env.get("CI_PIPELINE_SOURCE", ""),
        "mr_iid": _int(env, "CI_MERGE_REQUEST_IID"),
        "mr_source_branch": env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", ""),
        "mr_source_branch_sha": env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", ""),
        "mr_source_project_id": _int(env, "CI_MERGE_REQUEST_SOURCE_PROJECT_ID"),
        "mr_project_id": _int(env, "CI_MERGE_REQUEST_PROJECT_ID"),
        # SELFIX_GITLAB_PUSH_URL: another remote for the fix branch (a git mirror; the tests' bare repository).
        "push_url": env.get("SELFIX_GITLAB_PUSH_URL") or f"{server_url}/{project_path}.git",
        "output_path": Path(output) if Path(output).is_absolute() else Path(workspace) / output,
    }
    if env.get("SELFIX_GITLAB_MAX_RETRIES"):
        values["max_retries"] = env["SELFIX_GITLAB_MAX_RETRIES"]
    try:
        return GitLabSettings.model_validate(values)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InputError(f"invalid GitLab CI settings: {details}") from exc
