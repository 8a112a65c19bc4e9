"""``load_config``: ``selfix serve``'s one YAML file, and its secrets from the environment only.

Pure apart from reading the file: the environment is passed in. A secret written in the file is refused, so a
config file can be committed, copied into an image or pasted into an issue without leaking anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from selfix_action.errors import InputError

ENV_GITHUB_WEBHOOK_SECRET = "SELFIX_SERVE_GITHUB_WEBHOOK_SECRET"
ENV_SENTRY_CLIENT_SECRET = "SELFIX_SERVE_SENTRY_CLIENT_SECRET"
ENV_SIGNING_SECRET = "SELFIX_SERVE_SIGNING_SECRET"
ENV_GITHUB_TOKEN = "SELFIX_SERVE_GITHUB_TOKEN"
ENV_ADMIN_TOKEN = "SELFIX_SERVE_ADMIN_TOKEN"

# Keys that would hold a secret: refused anywhere in the file, whatever their nesting.
_SECRET_KEY = re.compile(r"secret|token|password|api[_-]?key|private[_-]?key", re.IGNORECASE)
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_WORKFLOW_FILE = re.compile(r"^[A-Za-z0-9_.-]+\.ya?ml$")
_ENGINES = ("offline", "anthropic", "openai")


@dataclass(frozen=True)
class RepositoryConfig:
    repo: str  # owner/name
    workflow: str = "selfix.yml"  # the project's selfix workflow (on: workflow_dispatch), by file name
    ref: str = "main"  # the branch a production error is healed on
    sentry_projects: tuple[str, ...] = ()  # Sentry project slugs whose alerts belong to this repository


@dataclass(frozen=True)
class LocalConfig:
    """The local worker pool, for a project without GitHub Actions: heals run by ``selfix fix --from-error``."""

    repo: str  # the name signals carry (the generic source's "repo"), owner/name or any slug
    path: Path  # the checkout the heals run in
    test_command: str
    engine: str = "anthropic"
    workers: int = 1
    sentry_projects: tuple[str, ...] = ()


@dataclass(frozen=True)
class Secrets:
    # repr=False: a config printed in a log or a traceback shows no secret
    github_webhook: bytes = field(default=b"", repr=False)
    sentry_client: bytes = field(default=b"", repr=False)
    signing: bytes = field(default=b"", repr=False)
    github_token: str = field(default="", repr=False)
    admin_token: str = field(default="", repr=False)


@dataclass(frozen=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    database: Path = Path("selfix-serve.sqlite3")
    max_body_bytes: int = 1024 * 1024
    replay_window_seconds: int = 300
    queue_size: int = 10_000  # signals waiting for the writer; beyond it the server answers 503
    github_api_url: str = "https://api.github.com"
    dispatch_interval_seconds: float = 1.0  # how often the dispatcher looks for pending heals
    max_dispatch_attempts: int = 5  # transport failures before a heal is marked failed
    # Heals dispatched to one repository's Actions per rolling hour: a storm of distinct errors (a bad deploy) waits
    # in the database instead of starting hundreds of runners at once.
    max_dispatches_per_hour: int = 20
    # False: receive and store only (a staging server, or measuring the receiver alone); heals stay pending
    dispatch: bool = True
    repositories: tuple[RepositoryConfig, ...] = ()
    local: LocalConfig | None = None
    secrets: Secrets = Secrets()

    def repository(self, name: str) -> RepositoryConfig | None:
        return next((r for r in self.repositories if r.repo.lower() == name.lower()), None)

    def knows(self, name: str) -> bool:
        return self.repository(name) is not None or (self.local is not None and self.local.repo == name)

    def repo_of_sentry_project(self, slug: str) -> str | None:
        for r in self.repositories:
            if slug in r.sentry_projects:
                return r.repo
        if self.local is not None and slug in self.local.sentry_projects:
            return self.local.repo
        return None


def _secret_keys(value: Any, where: str) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            if _SECRET_KEY.search(str(key)):
                found.append(name)
            found.extend(_secret_keys(item, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_secret_keys(item, f"{where}[{index}]"))
    return found


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any, where: str) -> Any:
    value = data.get(key, default)
    # bool is an int: a port of `true` is refused rather than read as 1
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float, (int, float))):
        raise InputError(f"serve config: {where}{key} must be {_kind_name(kind)}, got {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string", int: "an integer", float: "a number", list: "a list", dict: "a mapping", bool: "true or false"
    }  # fmt: skip
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _unknown(data: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise InputError(f"serve config: unknown field {where}{extra[0]} (known: {', '.join(sorted(allowed))})")


def _slugs(data: dict[str, Any], where: str) -> tuple[str, ...]:
    slugs = _field(data, "sentry_projects", list, [], where)
    if not all(isinstance(s, str) and s for s in slugs):
        raise InputError(f"serve config: {where}sentry_projects must be a list of Sentry project slugs")
    return tuple(slugs)


def _repository(raw: Any, index: int) -> RepositoryConfig:
    where = f"repositories[{index}]."
    if not isinstance(raw, dict):
        raise InputError(f"serve config: repositories[{index}] must be a mapping with repo, workflow, ref")
    _unknown(raw, {"repo", "workflow", "ref", "sentry_projects"}, where)
    repo = _field(raw, "repo", str, "", where)
    if not _REPO.match(repo):
        raise InputError(f"serve config: {where}repo must be owner/name, got {repo!r}")
    workflow = _field(raw, "workflow", str, "selfix.yml", where)
    if not _WORKFLOW_FILE.match(workflow):
        raise InputError(f"serve config: {where}workflow must be a workflow file name like selfix.yml")
    ref = _field(raw, "ref", str, "main", where)
    if not ref:
        raise InputError(f"serve config: {where}ref must name a branch")
    return RepositoryConfig(repo=repo, workflow=workflow, ref=ref, sentry_projects=_slugs(raw, where))


def _local(raw: Any, base: Path) -> LocalConfig:
    where = "local."
    if not isinstance(raw, dict):
        raise InputError("serve config: local must be a mapping with repo, path, test_command")
    _unknown(raw, {"repo", "path", "test_command", "engine", "workers", "sentry_projects"}, where)
    repo = _field(raw, "repo", str, "", where)
    if not repo:
        raise InputError("serve config: local.repo must name the project (the generic source's repo)")
    path_text = _field(raw, "path", str, "", where)
    if not path_text:
        raise InputError("serve config: local.path must be the project's checkout")
    test_command = _field(raw, "test_command", str, "", where)
    if not test_command:
        raise InputError("serve config: local.test_command must be the project's test command")
    engine = _field(raw, "engine", str, "anthropic", where)
    if engine not in _ENGINES:
        raise InputError(f"serve config: local.engine must be one of {', '.join(_ENGINES)}, got {engine!r}")
    workers = _field(raw, "workers", int, 1, where)
    if not 1 <= workers <= 64:
        raise InputError(f"serve config: local.workers must be between 1 and 64, got {workers}")
    return LocalConfig(
        repo=repo,
        path=(base / path_text).resolve(),
        test_command=test_command,
        engine=engine,
        workers=workers,
        sentry_projects=_slugs(raw, where),
    )


def _secrets(env: Mapping[str, str]) -> Secrets:
    return Secrets(
        github_webhook=env.get(ENV_GITHUB_WEBHOOK_SECRET, "").encode(),
        sentry_client=env.get(ENV_SENTRY_CLIENT_SECRET, "").encode(),
        signing=env.get(ENV_SIGNING_SECRET, "").encode(),
        github_token=env.get(ENV_GITHUB_TOKEN, ""),
        admin_token=env.get(ENV_ADMIN_TOKEN, ""),
    )


def parse_config(data: Any, env: Mapping[str, str], base: Path = Path(".")) -> ServeConfig:
    """The config from the file's parsed YAML; relative paths are taken from ``base`` (the file's folder)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("serve config: the file must hold a mapping (listen, database, repositories, ...)")
    secret_keys = _secret_keys(data, "")
    if secret_keys:
        raise InputError(
            f"serve config: {secret_keys[0]} looks like a secret; secrets are read from the environment only "
            f"({ENV_GITHUB_WEBHOOK_SECRET}, {ENV_SENTRY_CLIENT_SECRET}, {ENV_SIGNING_SECRET}, {ENV_GITHUB_TOKEN}, "
            f"{ENV_ADMIN_TOKEN})"
        )
    known = {
        "listen", "database", "max_body_bytes", "replay_window_seconds", "queue_size", "github_api_url",
        "dispatch_interval_seconds", "max_dispatch_attempts", "max_dispatches_per_hour", "dispatch", "repositories",
        "local",
    }  # fmt: skip
    _unknown(data, known, "")
    listen = _field(data, "listen", str, "127.0.0.1:8080", "")
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise InputError(f"serve config: listen must be host:port, got {listen!r}")
    database = _field(data, "database", str, "selfix-serve.sqlite3", "")
    max_body = _field(data, "max_body_bytes", int, 1024 * 1024, "")
    window = _field(data, "replay_window_seconds", int, 300, "")
    queue_size = _field(data, "queue_size", int, 10_000, "")
    interval = _field(data, "dispatch_interval_seconds", (int, float), 1.0, "")
    attempts = _field(data, "max_dispatch_attempts", int, 5, "")
    per_hour = _field(data, "max_dispatches_per_hour", int, 20, "")
    dispatch = _field(data, "dispatch", bool, True, "")
    api_url = _field(data, "github_api_url", str, "https://api.github.com", "")
    for name, value in (
        ("max_body_bytes", max_body),
        ("replay_window_seconds", window),
        ("queue_size", queue_size),
        ("dispatch_interval_seconds", interval),
        ("max_dispatch_attempts", attempts),
        ("max_dispatches_per_hour", per_hour),
    ):
        if value <= 0:
            raise InputError(f"serve config: {name} must be positive, got {value}")
    if not api_url.startswith(("https://", "http://")):
        raise InputError(f"serve config: github_api_url must be an http(s) URL, got {api_url!r}")
    raw_repos = _field(data, "repositories", list, [], "")
    repositories = tuple(_repository(raw, i) for i, raw in enumerate(raw_repos))
    names = [r.repo.lower() for r in repositories]
    if len(set(names)) != len(names):
        raise InputError("serve config: repositories lists a repository twice")
    local = _local(data["local"], base) if data.get("local") is not None else None
    if not repositories and local is None:
        raise InputError("serve config: repositories (or local) must name at least one project to heal")
    return ServeConfig(
        host=host.strip("[]"),
        port=int(port_text),
        database=(base / database).resolve(),
        max_body_bytes=max_body,
        replay_window_seconds=window,
        queue_size=queue_size,
        github_api_url=api_url.rstrip("/"),
        dispatch_interval_seconds=float(interval),
        max_dispatch_attempts=attempts,
        max_dispatches_per_hour=per_hour,
        dispatch=dispatch,
        repositories=repositories,
        local=local,
        secrets=_secrets(env),
    )


def load_config(path: Path, env: Mapping[str, str]) -> ServeConfig:
    """Read and check ``path``; every problem is an ``InputError`` naming the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"serve config: cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"serve config: {path} is not valid YAML: {exc}") from exc
    config = parse_config(data, env, path.parent)
    if config.repositories and config.dispatch and not config.secrets.github_token:
        raise InputError(f"serve config: repositories are dispatched to GitHub Actions, which needs {ENV_GITHUB_TOKEN}")
    if not (config.secrets.github_webhook or config.secrets.sentry_client or config.secrets.signing):
        raise InputError(
            f"serve config: no webhook secret set: {ENV_GITHUB_WEBHOOK_SECRET}, {ENV_SENTRY_CLIENT_SECRET} or "
            f"{ENV_SIGNING_SECRET} (a source without its secret refuses every request)"
        )
    return config
