"""The config file: defaults, every field checked by name, secrets only from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.errors import ExitCode, InputError
from selfix_action.serve.config import load_config, parse_config

ENV = {"SELFIX_SERVE_GITHUB_WEBHOOK_SECRET": "s", "SELFIX_SERVE_GITHUB_TOKEN": "t"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "serve.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_minimal_file_takes_the_documented_defaults(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, "repositories:\n  - repo: octo/app\n"), ENV)
    assert (config.host, config.port, config.max_body_bytes, config.replay_window_seconds) == (
        "127.0.0.1",
        8080,
        1024 * 1024,
        300,
    )
    assert config.database == tmp_path / "selfix-serve.sqlite3"  # relative to the file, not the cwd
    repo = config.repositories[0]
    assert (repo.repo, repo.workflow, repo.ref) == ("octo/app", "selfix.yml", "main")
    assert config.secrets.github_webhook == b"s" and config.secrets.github_token == "t"
    assert "'t'" not in repr(config) and "b's'" not in repr(config)  # never printed with the config


@pytest.mark.parametrize(
    "text",
    [
        "repositories:\n  - repo: octo/app\ngithub_webhook_secret: hunter2\n",
        "repositories:\n  - repo: octo/app\n    token: ghp_x\n",
        "local:\n  repo: app\n  path: .\n  test_command: pytest\n  api_key: sk-1\n",
    ],
)
def test_a_secret_written_in_the_file_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(InputError, match="looks like a secret; secrets are read from the environment only"):
        load_config(_write(tmp_path, text), ENV)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("listen: 8080\nrepositories: [{repo: o/r}]\n", "listen"),
        ("listen: 'localhost'\nrepositories: [{repo: o/r}]\n", "listen"),
        ("max_body_bytes: -1\nrepositories: [{repo: o/r}]\n", "max_body_bytes"),
        ("replay_window_seconds: true\nrepositories: [{repo: o/r}]\n", "replay_window_seconds"),
        ("repositories: [{repo: not-a-repo}]\n", "repositories[0].repo"),
        ("repositories: [{repo: o/r, workflow: 'x/../y'}]\n", "repositories[0].workflow"),
        ("repositories: [{repo: o/r, colour: red}]\n", "repositories[0].colour"),
        ("repositories: [{repo: o/r}, {repo: O/R}]\n", "twice"),
        ("verbose: true\nrepositories: [{repo: o/r}]\n", "verbose"),
        ("local: {repo: app, path: ., test_command: pytest, workers: 0}\n", "local.workers"),
        ("local: {repo: app, path: ., test_command: pytest, engine: magic}\n", "local.engine"),
        ("{}\n", "repositories"),
        ("- a list\n", "mapping"),
        ("listen: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_config_names_the_field_and_exits_2(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")) as caught:
        load_config(_write(tmp_path, text), ENV)
    assert caught.value.exit_code == ExitCode.BAD_INPUT


def test_dispatching_needs_the_token_and_receiving_needs_a_secret(tmp_path: Path) -> None:
    path = _write(tmp_path, "repositories: [{repo: o/r}]\n")
    with pytest.raises(InputError, match="SELFIX_SERVE_GITHUB_TOKEN"):
        load_config(path, {"SELFIX_SERVE_GITHUB_WEBHOOK_SECRET": "s"})
    with pytest.raises(InputError, match="no webhook secret set"):
        load_config(path, {"SELFIX_SERVE_GITHUB_TOKEN": "t"})
    receive_only = _write(tmp_path, "dispatch: false\nrepositories: [{repo: o/r}]\n")
    assert not load_config(receive_only, {"SELFIX_SERVE_SIGNING_SECRET": "s"}).dispatch


def test_sentry_projects_map_to_their_repository() -> None:
    config = parse_config(
        {
            "repositories": [{"repo": "o/web", "sentry_projects": ["web", "12"]}],
            "local": {"repo": "tools", "path": ".", "test_command": "pytest", "sentry_projects": ["cli"]},
        },
        {},
    )
    assert config.repo_of_sentry_project("web") == "o/web"
    assert config.repo_of_sentry_project("12") == "o/web"
    assert config.repo_of_sentry_project("cli") == "tools"
    assert config.repo_of_sentry_project("other") is None


def test_selfix_serve_exits_2_on_a_bad_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from selfix_action.cli import main

    path = _write(tmp_path, "repositories: [{repo: o/r}]\nwebhook_secret: oops\n")
    assert main(["serve", "--config", str(path)]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("selfix: error: serve config: webhook_secret looks like a secret") and err.count("\n") == 1
    assert main(["serve", "--config", str(tmp_path / "absent.yml")]) == ExitCode.BAD_INPUT
