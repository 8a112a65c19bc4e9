"""``selfix gitlab``'s settings: every option of the table from its ``SELFIX_<NAME>`` variable (the names derived,
not declared again), the GitLab context from ``CI_*``, and the skip rules, as pure functions of the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.errors import InputError
from selfix_action.gitlab_ci.runner import skip_reason
from selfix_action.gitlab_ci.settings import (
    GITLAB_OPTIONS,
    NOT_ON_GITLAB,
    GitLabSettings,
    load_gitlab_settings,
    variable,
)
from selfix_action.options import OPTIONS
from selfix_action.publish.values import Mode


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "CI_SERVER_URL": "https://gitlab.example.com/",
        "CI_PROJECT_ID": "42",
        "CI_PROJECT_PATH": "group/sub/project",
        "CI_PROJECT_DIR": str(tmp_path),
        "CI_COMMIT_SHA": "b" * 40,
        "CI_COMMIT_REF_NAME": "feature/x",
        "CI_DEFAULT_BRANCH": "main",
        "CI_PIPELINE_URL": "https://gitlab.example.com/group/sub/project/-/pipelines/7",
        **extra,
    }


def _load(tmp_path: Path, **extra: str) -> GitLabSettings:
    return load_gitlab_settings(_env(tmp_path, **extra))


def test_every_option_but_the_github_ones_has_a_variable() -> None:
    assert {o.name for o in GITLAB_OPTIONS} == {o.name for o in OPTIONS} - NOT_ON_GITLAB
    assert NOT_ON_GITLAB <= {o.name for o in OPTIONS}
    assert variable("max_attempts") == "SELFIX_MAX_ATTEMPTS"


@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        ("max_attempts", "7", 7),
        ("timeout_minutes", "12.5", 12.5),
        ("labels", "selfix, bot", ("selfix", "bot")),
        ("draft", "true", True),
        ("mode", "report", Mode.REPORT),
        ("junit_paths", "reports/*.xml\nother.xml", ("reports/*.xml", "other.xml")),
        ("isolation", "landlock", "landlock"),
    ],
)
def test_options_come_from_their_variables(tmp_path: Path, name: str, raw: str, value: object) -> None:
    assert getattr(_load(tmp_path, **{variable(name): raw}).options, name) == value


def test_defaults_are_the_table_s(tmp_path: Path) -> None:
    options = _load(tmp_path).options
    for option in GITLAB_OPTIONS:
        if option.default not in ("", None) and option.kind not in ("list", "secret"):
            assert getattr(options, option.name) == option.default, option.name


def test_github_variables_are_not_read(tmp_path: Path) -> None:
    settings = _load(tmp_path, SELFIX_GITHUB_TOKEN="ghp_x", INPUT_MAX_ATTEMPTS="9")
    assert settings.options.github_token.get_secret_value() == "" and settings.options.max_attempts != 9


def test_the_context_comes_from_ci_variables(tmp_path: Path) -> None:
    settings = _load(tmp_path, SELFIX_GITLAB_TOKEN="glpat-t")
    assert settings.project_id == 42 and settings.server_url == "https://gitlab.example.com"
    assert settings.push_url == "https://gitlab.example.com/group/sub/project.git"
    assert settings.options.run_url.endswith("/-/pipelines/7") and settings.options.workspace == tmp_path
    assert settings.token.get_secret_value() == "glpat-t" and "glpat-t" not in repr(settings)
    assert settings.output_path == tmp_path / ".selfix" / "selfix.env"


def test_a_merge_request_pipeline(tmp_path: Path) -> None:
    mr = {
        "CI_MERGE_REQUEST_IID": "3",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature/y",
        "CI_MERGE_REQUEST_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "42",
    }
    settings = _load(tmp_path, **mr)
    assert (settings.mr_iid, settings.failing_branch, settings.fork) == (3, "feature/y", False)
    forked = _load(tmp_path, **{**mr, "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "99"})
    assert forked.fork and "fork" in skip_reason(forked)


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({}, ""),
        ({"CI_COMMIT_REF_NAME": "selfix/0123456789ab"}, "selfix fix branch"),
        ({"CI_COMMIT_TAG": "v1"}, "tag pipeline"),
        ({"CI_COMMIT_AUTHOR": "selfix <selfix@users.noreply.github.com>"}, "selfix's own"),
        ({"CI_COMMIT_REF_NAME": ""}, "no branch"),
        (
            {"CI_MERGE_REQUEST_IID": "3", "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": "c" * 40},
            "merged-results pipeline",
        ),
    ],
)
def test_skip_rules(tmp_path: Path, extra: dict[str, str], why: str) -> None:
    reason = skip_reason(_load(tmp_path, **extra))
    assert (why in reason) if why else reason == ""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"CI_PROJECT_ID": ""}, "CI_PROJECT_ID is not set"),
        ({"CI_PROJECT_ID": "group%2Fproject"}, "CI_PROJECT_ID must be a number"),
        ({"SELFIX_MAX_ATTEMPTS": "many"}, "max_attempts"),
        ({"SELFIX_MODE": "yolo"}, "mode"),
        ({"SELFIX_GITLAB_PUSH_URL": "https://oauth2:glpat-x@gitlab.example.com/p.git"}, "must not carry a credential"),
    ],
)
def test_bad_settings_are_input_errors(tmp_path: Path, extra: dict[str, str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        _load(tmp_path, **extra)
