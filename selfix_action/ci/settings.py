"""The options of the table as settings, for every CI front end: ``load_options`` validates a front end's raw
option values (the action's ``INPUT_*``, the GitLab job's ``SELFIX_*``) with the config file
(``.github/selfix.yml``) into a frozen model. Precedence per option: a non-empty value from the front end, then the
config file, then the built-in default (the action's inputs default to empty so that the config file can set
them). Secrets (token, API keys) come only from the front end, never from the file.

Each front end subclasses ``OptionSettings`` with its forge's context (``action.settings.Settings``,
``gitlab_ci.settings.GitLabOptions``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from selfix_action.errors import InputError
from selfix_action.options import BY_NAME, OPTIONS, Ports
from selfix_action.publish.values import Mode, PathRule

DEFAULT_CONFIG_FILE = BY_NAME["config_file"].default
# How test runs are isolated (selfix_action.sandbox.isolation.IsolationConfig.mode): auto takes the best that works.
IsolationMode = Literal["auto", "bwrap", "landlock", "unshare", "none"]
# CI on a fix branch: pushes made with GITHUB_TOKEN start no workflow, so selfix dispatches the failed one there.
CiOnFixBranch = Literal["dispatch", "off"]
ConfidenceBar = Literal["high", "medium", "low"]
MAX_CONFIG_BYTES = 256 * 1024
# The memory of past fixes is off unless memory_path names a file: on the benchmark's project split it changed no
# heal (docs/LEARNING.md, "Does learning help?"). `.selfix/memory.db` is the path the docs' cache workflow uses.
DEFAULT_MEMORY_PATH = BY_NAME["memory_path"].default
# memory_path values that turn the memory of past fixes off
NO_MEMORY = frozenset({"none", "off", "false"})


def _check_memory_path(value: str | None, *, allow_absolute: bool) -> str | None:
    """A workspace-relative path without ``..`` (the config file may not name an absolute one)."""
    if value is None or value.strip().lower() in NO_MEMORY:
        return value
    path = Path(value)
    if not value.strip() or ".." in path.parts or (path.is_absolute() and not allow_absolute):
        raise ValueError(f"memory_path must be a path inside the workspace (no '..'), got {value!r}")
    return value


def _file_config_fields() -> dict[str, Any]:
    """The config file's keys: every non-secret option of the table, each optional (unset: the input or default)."""
    fields: dict[str, Any] = {}
    for option in OPTIONS:
        if option.config:
            fields[option.name] = (option.annotation | None, Field(None, description=option.help, **option.limits))
    return fields


class _FileConfigBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, title="selfix configuration (.github/selfix.yml)")

    rules: tuple[PathRule, ...] = ()

    @field_validator("memory_path", check_fields=False)
    @classmethod
    def _memory_inside(cls, value: str | None) -> str | None:
        return _check_memory_path(value, allow_absolute=False)


# The schema of ``.github/selfix.yml``: the action's non-secret inputs (selfix_action/options.py) plus per-path
# rules.
FileConfig: type[_FileConfigBase] = create_model(
    "FileConfig", __base__=_FileConfigBase, __doc__="The schema of .github/selfix.yml", **_file_config_fields()
)

# Every input declared in action.yml and its built-in default ("" = no default).
INPUT_DEFAULTS: dict[str, Any] = {option.name: option.default for option in OPTIONS}
SECRET_INPUTS = frozenset(o.name for o in OPTIONS if o.kind == "secret")
LIST_INPUTS = frozenset(o.name for o in OPTIONS if o.kind == "list")
BOOL_INPUTS = frozenset(o.name for o in OPTIONS if o.kind == "bool")


def _option(name: str) -> Any:
    """A setting's default and bounds, as the options table declares them."""
    option = BY_NAME[name]
    return Field(option.default, **option.limits)


class OptionSettings(BaseModel):
    """The options of the table (and the config file's rules) as one run of any front end holds them, with
    the little of the run's context every front end has: validated once, frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # the options (secrets: from the front end's inputs or variables only, never from the config file)
    github_token: SecretStr = SecretStr("")
    anthropic_api_key: SecretStr = SecretStr("")
    openai_api_key: SecretStr = SecretStr("")
    anthropic_base_url: str = _option("anthropic_base_url")
    openai_base_url: str = _option("openai_base_url")
    engine: str = "offline"  # the table's "" is resolved by load_settings: offline, or auto with a key
    provider: Literal["", "anthropic", "openai"] = _option("provider")
    model: str = _option("model")
    structured: str = _option("structured")
    request_timeout: float = _option("request_timeout")
    max_retry_wait: float = _option("max_retry_wait")
    max_calls: int = _option("max_calls")  # 0: no cap
    max_tokens: int = _option("max_tokens")  # 0: no cap
    prices_file: str = _option("prices_file")  # a price table in the workspace
    price_per_mtok_in: float | None = _option("price_per_mtok_in")  # a model outside the price table: its price
    price_per_mtok_out: float | None = _option("price_per_mtok_out")
    heal_seen_failures: bool = _option("heal_seen_failures")
    max_output_tokens: int = _option("max_output_tokens")  # 0: each role's own
    samples: int = _option("samples")
    max_asks: int = _option("max_asks")  # 0: the model is offered no asks
    offline_candidates: int = _option("offline_candidates")
    test_timeout: float = _option("test_timeout")
    jobs: int = _option("jobs")  # 0: the runner's CPUs, at most 4
    max_candidates: int = _option("max_candidates")
    test_command: str = _option("test_command")
    working_directory: str = _option("working_directory")
    toolchain: str = _option("toolchain")
    setup_command: str = _option("setup_command")
    junit_paths: tuple[str, ...] = _option("junit_paths")
    junit_artifact: str = _option("junit_artifact")
    mode: Mode = Mode.PR
    max_cost_usd: float = _option("max_cost_usd")
    max_attempts: int = _option("max_attempts")
    timeout_minutes: float = _option("timeout_minutes")
    allowed_users: tuple[str, ...] = _option("allowed_users")
    allowed_bots: tuple[str, ...] = _option("allowed_bots")
    protected_paths: tuple[str, ...] = _option("protected_paths")
    labels: tuple[str, ...] = _option("labels")
    draft: bool = _option("draft")
    pr_confidence: ConfidenceBar = _option("pr_confidence")  # the lowest confidence that opens a ready fix PR
    isolation: IsolationMode = _option("isolation")
    require_isolation: bool = _option("require_isolation")
    allow_ports: Ports = _option("allow_ports")  # the host's loopback ports test runs may connect to
    memory_path: str = _option("memory_path")  # relative to the workspace; "none" turns the memory off
    config_file: str = _option("config_file")
    from_error: str = _option("from_error")  # a reported error's file in the workspace: heal it (--from-error)
    ci_on_fix_branch: CiOnFixBranch = _option("ci_on_fix_branch")
    max_open_prs: int = _option("max_open_prs")  # 0: no cap
    opt_out_label: str = _option("opt_out_label")
    rules: tuple[PathRule, ...] = ()

    # the run's context every front end has
    workspace: Path = Path(".")
    repository: str = ""  # how the report names the repository ("" : ".")

    @model_validator(mode="after")
    def _isolation_consistent(self) -> OptionSettings:
        if self.require_isolation and self.isolation == "none":
            raise ValueError("require_isolation contradicts isolation: none")
        return self

    @field_validator("memory_path")
    @classmethod
    def _memory_path_shape(cls, value: str) -> str:
        return _check_memory_path(value, allow_absolute=True) or DEFAULT_MEMORY_PATH

    @property
    def memory_file(self) -> Path | None:
        """Where the memory of past fixes lives for this run (None: turned off)."""
        if self.memory_path.strip().lower() in NO_MEMORY:
            return None
        path = Path(self.memory_path)
        return path if path.is_absolute() else self.workspace / path

    @property
    def run_url(self) -> str:
        """The page of this CI run ("" where the front end has none)."""
        return ""


SettingsT = TypeVar("SettingsT", bound=OptionSettings)


def _split_list(value: str) -> tuple[str, ...]:
    """Inputs are strings: lists are comma- or newline-separated."""
    items = [item.strip() for line in value.splitlines() for item in line.split(",")]
    return tuple(item for item in items if item)


def load_file_config(path: Path) -> FileConfig:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise InputError(f"{path}: config file is larger than {MAX_CONFIG_BYTES} bytes")
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the config file: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: the config file must be a mapping of settings")
    try:
        return FileConfig.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{path}: {_describe(exc)}") from exc


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        if error["type"] == "extra_forbidden":
            parts.append(f"unknown key {where!r}")
        else:
            parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _bool(what: str, name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise InputError(f"{what} {name} must be true or false, got {value!r}")


def load_options(
    raw: Mapping[str, str],
    model: type[SettingsT],
    *,
    workspace: Path,
    context: Mapping[str, Any] | None = None,
    what: str = "input",
) -> SettingsT:
    """``model`` from the front end's non-empty raw option values by option name (``raw``), the config file in
    ``workspace`` they may name, and the front end's ``context`` fields. ``what`` is how the front end calls an
    option, for errors. Pure apart from reading that one file."""
    inputs = {name: value.strip() for name, value in raw.items() if name in INPUT_DEFAULTS and value.strip()}
    config_file = inputs.get("config_file", DEFAULT_CONFIG_FILE)
    config_path = Path(config_file) if Path(config_file).is_absolute() else workspace / config_file
    file_config = load_file_config(config_path) if config_path.is_file() else FileConfig()
    # The runner passes every declared input, defaults included: the default path missing means "no config file";
    # only a path the user chose must exist.
    if config_file != DEFAULT_CONFIG_FILE and not config_path.is_file():
        raise InputError(f"config_file {config_file!r} does not exist in the workspace")

    values: dict[str, Any] = {}
    for name, default in INPUT_DEFAULTS.items():
        value = inputs.get(name)
        if value is not None:
            if name in LIST_INPUTS:
                values[name] = _split_list(value)
            elif name in BOOL_INPUTS:
                values[name] = _bool(what, name, value)
            else:
                values[name] = value
        elif BY_NAME[name].config and getattr(file_config, name) is not None:
            values[name] = getattr(file_config, name)
        elif default != "" and default is not None:
            values[name] = default
    if not values.get("engine"):
        # No engine named: the offline engine; with a key, auto (the offline engine first, then the LLM engine of
        # that key: no model call when the offline engine heals).
        if "anthropic_api_key" in inputs or "openai_api_key" in inputs:
            values["engine"] = "auto"
        else:
            values["engine"] = "offline"
    values["rules"] = file_config.rules
    try:
        return model.model_validate({**values, "workspace": workspace, **(context or {})})
    except ValidationError as exc:
        raise InputError(f"invalid {what}: {_describe(exc)}") from exc


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``.github/selfix.yml`` (committed as ``config_schema.json``)."""
    schema = FileConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def render_config_schema() -> str:
    return json.dumps(config_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # regenerate: python -m selfix_action.ci.settings > selfix_action/ci/config_schema.json
    print(render_config_schema(), end="")
