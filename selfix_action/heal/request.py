"""What one heal is asked to do: a plain, frozen value every front end builds from its own inputs."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from selfix_action.errors import InputError
from selfix_action.repair.loop import LoopConfig
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits
from selfix_action.tracebacks import ReportedError

ENGINES = ("offline", "anthropic", "openai", "auto")


def read_price_table(path: Path, named: str) -> dict[str, Any]:
    """A YAML/JSON price table ({model: {input: USD per million tokens, output: ..., ...}}) that overrides the
    built-in one; ``named`` is how the front end calls the setting, for the error."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read the price table {named} ({path}): {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"the price table {named} ({path}) must be a mapping of model names to prices")
    return data


def price_pair(per_in: float | None, per_out: float | None, named: tuple[str, str]) -> tuple[float, float] | None:
    """The price of a model outside the table, USD per million input and output tokens: both or neither."""
    if per_in is None and per_out is None:
        return None
    if per_in is None or per_out is None:
        raise InputError(f"{named[0]} and {named[1]} go together: give both")
    if min(per_in, per_out) < 0:
        raise InputError(f"{named[0]} and {named[1]} cannot be negative")
    return (float(per_in), float(per_out))


@dataclass(frozen=True)
class EngineChoice:
    """Which engine heals, and its budgets (the LLM engines' only; the offline engine needs none of it)."""

    kind: str = "offline"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    max_calls: int = 40  # <= 0: no cap
    max_tokens: int = 400_000  # <= 0: no cap
    max_cost_usd: float = 2.0
    prices: Mapping[str, Any] | None = None  # overrides the built-in price table
    price: tuple[float, float] | None = None  # USD per million input, output tokens of this run's model
    max_retry_wait: float = 30.0
    request_timeout: float = 120.0  # seconds one model request may take
    structured: str = "auto"  # auto | tools | json-schema | json (models.base.STRUCTURED_CHOICES)
    samples: int = 1  # Patcher answers per hypothesis when the call budget allows
    max_asks: int = 8  # asks for more context per heal (0: none offered)
    max_output_tokens: int = 0  # > 0: caps every answer (below the roles' defaults)
    # "auto": the LLM provider after the offline engine ("" : the one whose key is set, anthropic first), and
    # the offline engine's share: candidates at most and a fraction of the time limit.
    provider: str = ""
    offline_candidates: int = 100
    offline_time_share: float = 0.35
    # A trace whose recorded model answers replay in order instead of a model (models.replay): the loop's
    # decisions re-checked on recorded heals with no server and no key.
    replay: Path | None = None
    # With ``replay``: the server (base_url) answers the calls after the recorded ones (roles added since).
    replay_then_server: bool = False
    # How the preflight's messages name what to fix (the action names its inputs): {"api_key": ..., ...}
    fixes: Mapping[str, str] = field(default_factory=dict)
    # Where keys and base URLs are looked up when not given: the CLI's environment, never the runner's for the
    # action (its keys come from its inputs only).
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in ENGINES:
            raise InputError(f"unknown engine {self.kind!r} (available: {', '.join(ENGINES)})")
        if self.replay is not None and self.kind == "offline":
            raise InputError("--replay replays an LLM engine's answers: use --engine openai, anthropic or auto")


@dataclass(frozen=True)
class HealRequest:
    """One heal of one repository: everything the pipeline needs, nothing about who asked."""

    repo: Path
    test_cmd: tuple[str, ...]
    out_dir: Path  # report.md, report.json, patch.diff, trace.jsonl, view.html
    # The project's folder in the repository, repository-relative ("." the root): pytest runs there, as the
    # project's CI runs it. "": found from the report or the repository (heal.project), the root when unclear.
    working_directory: str = ""
    # Which language's tests: "python" (pytest), "node" (jest, vitest, mocha, node --test) or "auto": node for a
    # folder with a package.json and no Python file (heal.project.node_project).
    toolchain: str = "auto"
    junit: tuple[Path, ...] = ()
    # A production error to heal instead of failing tests (``--from-error``): QA reproduces it by a new test first.
    reported_error: ReportedError | None = None
    # True (selfix fix): an unreadable JUnit file is bad input. False (the action): it is skipped with a warning,
    # since an artifact may hold other XML files beside the reports.
    junit_strict: bool = True
    engine: EngineChoice = field(default_factory=EngineChoice)
    loop: LoopConfig = field(default_factory=LoopConfig)
    limits: Limits = field(default_factory=Limits)
    isolation: IsolationConfig = field(default_factory=IsolationConfig)
    jobs: int | None = None  # candidates checked side by side; None: default_jobs()
    memory_path: Path | None = None  # None: no memory of past fixes
    env_source: Mapping[str, str] | None = None  # the environment test runs pick their allowlist from
    repo_label: str = "."  # how the report names the repository
    # Per-test lines where the project's environment lacks coverage.py: "fallback" (selfix's own line collector
    # then, the default), "always" (the collector even beside coverage.py) or "never" (tracebacks only); what the
    # benchmark's localization measurement compares (selfix_bench/collector_localization.py).
    line_collector: str = "fallback"
    # Run once before the heal (the action's setup_command, e.g. ``pip install -e .[test]``), within
    # ``setup_seconds``: inside the test runs' isolation (with the network) on a scratch copy, installing into a
    # project environment of its own whose interpreter then runs a Python test command (sandbox/setup.py).
    setup_command: str = ""
    setup_seconds: float = 900.0
    # How the next-step advice (heal.next_step) spells settings, over ``selfix fix``'s flags (CLI_OPTIONS): the
    # action names its inputs; a setting mapped to "" is one this front end does not offer.
    option_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def hint(self) -> str:
        return self.loop.user_hint


def resolve_test_cmd(test_cmd: str | None, repo: Path) -> tuple[str, ...]:
    """The project's pytest invocation; a relative interpreter path (``.venv/bin/python``) is the repo's."""
    if not test_cmd:
        return (sys.executable, "-m", "pytest")
    try:
        argv = shlex.split(test_cmd)
    except ValueError as exc:
        raise InputError(f"cannot parse the test command {test_cmd!r}: {exc}") from exc
    if not argv:
        raise InputError("the test command is empty")
    program = argv[0]
    if os.sep in program and not os.path.isabs(program):
        program = str((repo / program).resolve())
    elif os.sep not in program:
        found = shutil.which(program)
        if found is None:
            raise InputError(f"test command not found: {program}")
        program = found
    if not os.access(program, os.X_OK):
        raise InputError(f"test command is not an executable file: {program}")
    return (program, *argv[1:])
