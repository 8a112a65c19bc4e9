"""The options of any front end as one heal: the ``HealRequest`` for a run (``setup_command`` included)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from selfix_action.ci.settings import OptionSettings
from selfix_action.errors import InputError
from selfix_action.heal import EngineChoice, HealRequest, resolve_test_cmd
from selfix_action.heal.error_input import read_error_file
from selfix_action.heal.request import price_pair, read_price_table
from selfix_action.publish.policy import protected_patterns
from selfix_action.repair.loop import LoopConfig
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits
from selfix_action.tracebacks import ReportedError

# In the workspace, not RUNNER_TEMP: a container action's RUNNER_TEMP is not visible to the later
# actions/upload-artifact step, the workspace is (the example workflows upload .selfix/report/).
REPORT_DIR = Path(".selfix") / "report"  # report.md, report.json, patch.diff, trace.jsonl, view.html

# The composite variant (composite/action.yml) runs selfix from a venv of its own on the runner and names here the
# `python` the workflow's steps put on PATH: the project's interpreter, which the default test command and
# setup_command's project environment then use. The Docker variant leaves it unset: selfix's interpreter is the
# image's `python` there.
PROJECT_PYTHON_ENV = "SELFIX_PROJECT_PYTHON"

# The next-step advice (heal.next_step) in the action's inputs; "" for what the action does not offer.
ACTION_OPTIONS = {
    "engine_auto": "`engine: auto` with the `anthropic_api_key` (or `openai_api_key`) input set from a secret",
    "local_server": (
        "`engine: auto` with `openai_base_url` and `openai_api_key` of an OpenAI-compatible server the runner "
        "reaches, the `model` input, and `price_per_mtok_in: 0` with `price_per_mtok_out: 0` (a free server)"
    ),
    "max_candidates": "`max_candidates: {value:g}`",
    "time_limit": "`timeout_minutes: {minutes:g}`",
    "hypotheses": "`max_attempts: {value:g}`",
    "samples": "`samples: 2`",
    "model": "`model` input",
    "hint": "a `/selfix fix <notes>` comment on the pull request naming where you think the bug is",
    "max_calls": "`max_calls: {value:g}`",
    "max_tokens": "`max_tokens: {value:g}`",
    "max_cost": "`max_cost_usd: {value:g}`",
    "test_timeout": "`test_timeout: {seconds:g}`",
    "isolation_none": "`isolation: none` (only for a project you trust)",
    "test_command": "the `test_command` input",
    "dependencies": "install the project's dependencies with the `setup_command` input (e.g. `pip install -e .[test]`)",
    "junit": "the `junit_paths` or `junit_artifact` input pointing at this commit's reports",
    "heal_seen_failures": "`heal_seen_failures: true`",
    "working_directory": "`working_directory: <the folder your test job runs pytest in>`",
    "llm_setup": "the `anthropic_api_key` or `openai_api_key`, `anthropic_base_url` or `openai_base_url` and `model` "
    "inputs",
}


def default_test_command(env: Mapping[str, str]) -> str | None:
    """``<project python> -m pytest`` when the runner names the project's interpreter, else None (selfix's)."""
    python = env.get(PROJECT_PYTHON_ENV, "")
    return shlex.join([python, "-m", "pytest"]) if python else None


def isolation_config(settings: OptionSettings) -> IsolationConfig:
    """The ``isolation`` and ``require_isolation`` inputs; the sandbox uid stays IsolationConfig's (nobody).

    Fail closed: in the action no test runs without isolation unless the user says ``isolation: none`` (the
    image has bwrap, and the namespace-free landlock level works in Docker's default container), so every other
    mode requires isolation; a run with ``none`` warns in the job summary and the PR body."""
    required = settings.require_isolation or settings.isolation != "none"
    return IsolationConfig(mode=settings.isolation, require_isolation=required, allow_ports=settings.allow_ports)


def read_from_error_file(name: str, workspace: Path) -> ReportedError:
    """The ``from_error`` input: a traceback or a Sentry payload inside the workspace."""
    path = (workspace / name).resolve()
    if not path.is_relative_to(workspace.resolve()):
        raise InputError(f"from_error must be a file inside the workspace, got {name!r}")
    return read_error_file(str(path))


def read_prices_file(name: str, workspace: Path) -> dict[str, Any] | None:
    """The ``prices_file`` input: a price table inside the workspace (None: the built-in one)."""
    if not name:
        return None
    path = (workspace / name).resolve()
    if not path.is_relative_to(workspace):
        raise InputError(f"prices_file must be a file inside the workspace, got {name!r}")
    return read_price_table(path, "prices_file")


def heal_request(
    settings: OptionSettings,
    env: Mapping[str, str],
    junit: tuple[Path, ...],
    hint: str,
    option_names: Mapping[str, str] = ACTION_OPTIONS,
    *,
    reported_error: ReportedError | None = None,
) -> HealRequest:
    """The heal the settings ask for; ``option_names`` spells the options in the front end's words for the advice
    (the action's inputs by default)."""
    workspace = settings.workspace.resolve()
    time_limit = settings.timeout_minutes * 60
    provider = settings.engine
    if provider == "auto":  # the LLM engine after the offline one: the one named, else the one whose key is given
        provider = settings.provider or ("anthropic" if settings.anthropic_api_key.get_secret_value() else "openai")
    key = settings.anthropic_api_key if provider == "anthropic" else settings.openai_api_key
    base_url = settings.anthropic_base_url if provider == "anthropic" else settings.openai_base_url
    return HealRequest(
        repo=workspace,
        test_cmd=resolve_test_cmd(
            settings.test_command or default_test_command(env), workspace / (settings.working_directory or ".")
        ),
        out_dir=workspace / REPORT_DIR,
        working_directory=settings.working_directory,
        toolchain=settings.toolchain,
        junit=junit,
        reported_error=reported_error,
        junit_strict=False,  # an artifact may hold other XML beside the reports: skipped with a warning
        engine=EngineChoice(
            kind=settings.engine,
            model=settings.model or None,
            base_url=base_url or None,
            api_key=key.get_secret_value() or None,
            max_calls=settings.max_calls,  # 0: no cap
            max_tokens=settings.max_tokens,
            max_cost_usd=settings.max_cost_usd,
            prices=read_prices_file(settings.prices_file, workspace) if settings.engine != "offline" else None,
            max_retry_wait=settings.max_retry_wait,
            samples=settings.samples,
            max_asks=settings.max_asks,
            max_output_tokens=settings.max_output_tokens,
            offline_candidates=settings.offline_candidates,
            price=price_pair(
                settings.price_per_mtok_in, settings.price_per_mtok_out, ("price_per_mtok_in", "price_per_mtok_out")
            ),
            env={},  # keys come from the inputs only, never from the runner environment
            provider=provider if settings.engine == "auto" else "",
            structured=settings.structured,
            request_timeout=settings.request_timeout,
            # The preflight's usage errors name the inputs to fix.
            fixes={
                "api_key": f"the {provider}_api_key input",
                "base_url": f"the {provider}_base_url input",
                "model": "the model input",
                "price": "the price_per_mtok_in and price_per_mtok_out inputs (USD per million tokens; 0 and 0 for a "
                "server that costs nothing) or a prices_file",
                "max_cost": "the max_cost_usd input set to 0 (no dollar cap: timeout_minutes still bounds the run)",
            },
        ),
        loop=LoopConfig(
            max_hypotheses=settings.max_attempts,
            max_candidates=settings.max_candidates,
            heal_seen_failures=settings.heal_seen_failures,
            time_limit_seconds=time_limit,
            protected_paths=protected_patterns(settings),
            user_hint=hint,
        ),
        limits=Limits(wall_seconds=min(settings.test_timeout, time_limit)),
        jobs=settings.jobs or None,
        isolation=isolation_config(settings),  # the report and the job summary say which
        env_source=env,
        memory_path=settings.memory_file,
        repo_label=settings.repository or ".",
        setup_command=settings.setup_command,
        setup_seconds=time_limit,
        option_names=option_names,
    )
