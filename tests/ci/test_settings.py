"""The options of the table as settings, the same for every front end: raw values by option name (wherever the
front end read them), then the config file, then the defaults; errors in the front end's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.ci.settings import OptionSettings, load_options
from selfix_action.errors import InputError


def test_a_front_ends_values_win_over_the_config_file_and_the_defaults(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "selfix.yml").write_text("labels: [from-file]\nworking_directory: api\nmax_attempts: 2\n")

    settings = load_options(
        {"labels": "bug, selfix", "draft": "yes", "test_command": "  "}, OptionSettings, workspace=tmp_path
    )

    assert settings.labels == ("bug", "selfix") and settings.draft is True  # the front end's values
    assert settings.working_directory == "api" and settings.max_attempts == 2  # the config file's
    assert settings.test_command == "" and settings.engine == "offline"  # defaults; a blank value is unset
    assert settings.workspace == tmp_path and settings.run_url == ""


def test_a_key_without_an_engine_means_auto_and_secrets_never_come_from_the_file(tmp_path: Path) -> None:
    settings = load_options({"openai_api_key": "sk-x"}, OptionSettings, workspace=tmp_path)
    assert settings.engine == "auto" and settings.openai_api_key.get_secret_value() == "sk-x"


def test_errors_name_the_option_as_the_front_end_calls_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="CI/CD variable draft must be true or false"):
        load_options({"draft": "maybe"}, OptionSettings, workspace=tmp_path, what="CI/CD variable")
    with pytest.raises(InputError, match="invalid CI/CD variable: max_attempts"):
        load_options({"max_attempts": "0"}, OptionSettings, workspace=tmp_path, what="CI/CD variable")
