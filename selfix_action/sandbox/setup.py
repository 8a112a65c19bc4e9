"""The action's ``setup_command`` (typically ``pip install -e .[test]``): project code, so it runs here, under
the same process discipline as every test run: its own process group killed as a whole, a wall-clock limit,
an allowlisted environment (no token, key or ``INPUT_*`` passes) and capped output."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from selfix_action.errors import InputError
from selfix_action.sandbox.process import Limits, ProcessResult, run_process, sandbox_env

# Installers need their proxies and their own settings; sandbox_env still drops any secret-looking name.
_INSTALLER_PREFIXES = ("PIP_", "UV_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy")


def setup_argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InputError(f"cannot parse setup_command: {exc}") from exc
    if not argv:
        raise InputError("setup_command is empty")
    return argv


def run_setup_command(
    command: str, *, cwd: Path, env_source: Mapping[str, str], wall_seconds: float, max_output_bytes: int = 200_000
) -> ProcessResult:
    """Run ``command`` (split like a shell would, never through one) in ``cwd``. A non-zero exit is a result;
    ``SandboxError`` means it could not start."""
    allow = [name for name in env_source if name.startswith(_INSTALLER_PREFIXES)]
    env = sandbox_env(env_source, allow=allow)
    # Installs build wheels: no CPU or address-space cap, the wall limit bounds the step.
    limits = Limits(wall_seconds=wall_seconds, cpu_seconds=None, memory_bytes=None, max_output_bytes=max_output_bytes)
    return run_process(setup_argv(command), cwd=cwd, env=env, limits=limits)
