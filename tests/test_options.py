"""One table of options (selfix_action/options.py): action.yml, the composite variant, the config file's schema,
the action's settings and `selfix fix` all agree with it."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from selfix_action.action.settings import Settings, load_settings
from selfix_action.ci.request import heal_request
from selfix_action.ci.settings import INPUT_DEFAULTS, FileConfig
from selfix_action.cli import build_parser
from selfix_action.llm.factory import DEFAULT_MODELS
from selfix_action.options import BY_NAME, CLI_ONLY, OPTIONS, write_action_yml, write_docs_table

ROOT = Path(__file__).resolve().parents[1]


def fix_flags() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    fix = sub.choices["fix"]
    return {flag for action in fix._actions for flag in action.option_strings if flag.startswith("--")} - {"--help"}


def test_action_yml_inputs_are_the_table() -> None:
    assert write_action_yml(check=True), "run: python -m selfix_action.options && python packaging/composite.py"
    inputs = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    assert list(inputs) == [o.name for o in OPTIONS]
    composite = yaml.safe_load((ROOT / "composite" / "action.yml").read_text(encoding="utf-8"))["inputs"]
    assert composite == inputs


def test_every_option_is_a_setting_with_the_tables_default() -> None:
    fields = Settings.model_fields
    for option in OPTIONS:
        assert option.name in fields, option.name
        assert option.name in INPUT_DEFAULTS
    defaults = load_settings({}).model_dump()
    for option in OPTIONS:
        if option.kind == "secret" or option.name == "engine":  # engine: offline unless a key is given
            continue
        assert defaults[option.name] == option.default, option.name


def test_every_non_secret_option_is_a_config_key() -> None:
    keys = set(FileConfig.model_fields) - {"rules"}
    assert keys == {o.name for o in OPTIONS if o.config}
    assert not {o.name for o in OPTIONS if o.kind == "secret"} & keys


def test_every_fix_flag_is_an_option_or_cli_only_with_a_reason() -> None:
    flags = fix_flags()
    from_table = {flag for option in OPTIONS for flag in option.cli}
    assert from_table <= flags, from_table - flags  # a flag the table names exists
    assert set(CLI_ONLY) <= flags
    missing = flags - from_table - set(CLI_ONLY) - {"-q"}
    assert not missing, f"flags with neither an action input nor a reason in CLI_ONLY: {sorted(missing)}"


def test_the_documented_default_models_are_the_real_ones() -> None:
    for model in DEFAULT_MODELS.values():
        assert model in BY_NAME["model"].help


def test_the_action_passes_the_llm_budgets_and_servers_on(tmp_path: Path) -> None:
    """max_calls, max_tokens, provider, anthropic_base_url, prices_file, test_timeout and max_candidates reach
    the heal (before, the action had no such inputs and sent no call or token cap)."""
    (tmp_path / "prices.yml").write_text("my-model: {input: 1.0, output: 2.0}\n", encoding="utf-8")
    env = {
        "GITHUB_WORKSPACE": str(tmp_path),
        "INPUT_ANTHROPIC_API_KEY": "sk-ant-x",
        "INPUT_OPENAI_API_KEY": "sk-x",
        "INPUT_PROVIDER": "openai",
        "INPUT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "INPUT_MAX_CALLS": "7",
        "INPUT_MAX_TOKENS": "5000",
        "INPUT_PRICES_FILE": "prices.yml",
        "INPUT_TEST_TIMEOUT": "30",
        "INPUT_MAX_CANDIDATES": "50",
        "INPUT_SAMPLES": "2",
    }
    settings = load_settings(env)
    request = heal_request(settings, env, (), "")
    assert settings.engine == "auto"
    assert request.engine.provider == "openai"
    assert request.engine.base_url == "http://127.0.0.1:9/v1"
    assert request.engine.api_key == "sk-x"
    assert (request.engine.max_calls, request.engine.max_tokens, request.engine.samples) == (7, 5000, 2)
    assert request.engine.prices == {"my-model": {"input": 1.0, "output": 2.0}}
    assert request.limits.wall_seconds == 30
    assert request.loop.max_candidates == 50


def test_the_docs_table_of_inputs_is_the_table() -> None:
    assert write_docs_table(check=True), "run: python -m selfix_action.options"
    text = (ROOT / "docs" / "ACTION.md").read_text(encoding="utf-8")
    for option in OPTIONS:
        assert f"| `{option.name}` |" in text


def test_every_input_at_its_declared_default_as_the_runner_passes_them(tmp_path: Path) -> None:
    """The runner passes every declared input, defaults included: that must be the same run as no input at all
    (the token aside, whose default is the workflow's)."""
    inputs = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    env = {f"INPUT_{name.upper()}": str(spec["default"]) for name, spec in inputs.items()}
    env["INPUT_GITHUB_TOKEN"] = "ghs_token"
    base = {"GITHUB_WORKSPACE": str(tmp_path)}
    passed = load_settings(env | base).model_dump(exclude={"github_token"})
    assert passed == load_settings(base).model_dump(exclude={"github_token"})


def test_allow_ports_reaches_the_sandbox_from_every_front_end(tmp_path: Path) -> None:
    """The action input, the config file key and the GitLab variable all become the heal's
    ``IsolationConfig.allow_ports``; anything but TCP ports is bad input (exit 2)."""
    from selfix_action.errors import InputError
    from selfix_action.gitlab_ci.settings import load_gitlab_settings

    base = {"GITHUB_WORKSPACE": str(tmp_path)}
    settings = load_settings(base | {"INPUT_ALLOW_PORTS": "6379, 5432"})
    assert heal_request(settings, base, (), "").isolation.allow_ports == (5432, 6379)
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "selfix.yml").write_text("allow_ports: [5432, 27017]\n", encoding="utf-8")
    assert heal_request(load_settings(base), base, (), "").isolation.allow_ports == (5432, 27017)
    gitlab = {
        "CI_PROJECT_DIR": str(tmp_path),
        "CI_PROJECT_ID": "1",
        "CI_PROJECT_PATH": "g/p",
        "CI_COMMIT_SHA": "b" * 40,
    }
    gitlab["CI_SERVER_URL"] = "https://gitlab.example.com"
    options = load_gitlab_settings(gitlab | {"SELFIX_ALLOW_PORTS": "3306"}).options
    assert heal_request(options, gitlab, (), "").isolation.allow_ports == (3306,)
    assert load_settings(base).allow_ports == (5432, 27017) and load_settings({}).allow_ports == ()
    for bad in ("0", "65536", "postgres"):
        try:
            load_settings(base | {"INPUT_ALLOW_PORTS": bad})
        except InputError as exc:
            assert "allow_ports" in str(exc) and exc.exit_code == 2
        else:
            raise AssertionError(f"allow_ports {bad!r} was accepted")
