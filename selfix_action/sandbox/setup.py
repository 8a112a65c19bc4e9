"""The action's ``setup_command`` (typically ``pip install -e .[test]``): project code (its build backend runs),
so it runs inside the same isolation as every test run, with one difference: the network is allowed.

* **Where.** In a scratch copy of the repository made for the setup (no ``.git``, no caches or venvs: the copy
  the heal makes), never in the workspace: the workspace is what the action commits and pushes from with the
  write token, and where selfix's own git runs (a planted ``core.fsmonitor``, an edited workflow file). The
  workspace itself is hidden, as for the test runs, and so are the runner's files, homes and ``/run``.
* **Into what.** A plain virtual environment made by selfix (trusted: stdlib ``venv`` + ``ensurepip``, before
  any project code runs) from the interpreter the tests would use, beside the copy, in a private dir outside
  the workspace handed to the sandbox uid. Its ``bin`` is first on ``PATH`` and ``VIRTUAL_ENV`` is set, so
  ``pip install -e .[test]`` installs there, never into selfix's interpreter (read-only for the setup).
  selfix never runs that environment's interpreter outside the sandbox afterwards.
* **Then.** The heal's test runs use ``<venv>/bin/python`` (read-only for them). An editable install points at
  the setup copy, which the test runs cannot see; the heal's own scratch copy is first on ``sys.path``
  (``PYTHONPATH``, before site-packages and before setuptools' editable finder, which is appended to
  ``sys.meta_path``), so its sources, patched or not, are what the tests import.

The process discipline is that of every test run: its own session killed as a whole, a wall-clock limit, an
allowlisted environment (no token, key or ``INPUT_*`` passes) and capped output.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from selfix_action.errors import InputError, SandboxError
from selfix_action.repair.paths import IGNORED_DIR_NAMES
from selfix_action.sandbox.isolation import Isolation, IsolationLevel, former_home
from selfix_action.sandbox.process import Limits, ProcessResult, private_dirs, run_process, sandbox_env

__all__ = ["SetupResult", "create_environment", "project_env_source", "run_setup_command", "setup_argv"]

# Installers need their proxies and their own settings; sandbox_env still drops any secret-looking name.
_INSTALLER_PREFIXES = ("PIP_", "UV_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy")
_VENV_SECONDS = 300.0


def setup_argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InputError(f"cannot parse setup_command: {exc}") from exc
    if not argv:
        raise InputError("setup_command is empty")
    return argv


@dataclass(frozen=True)
class SetupResult:
    """What the setup left: its process result and the project's environment (alive until ``close``)."""

    result: ProcessResult
    python: Path  # the project's environment's interpreter: the heal's default test interpreter
    venv: Path
    project: Path  # the scratch copy the setup ran in (what an editable install points at)
    base: Path  # the private dir holding both
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.result.timed_out and self.result.returncode == 0

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def project_env_source(source: Mapping[str, str], venv: Path) -> dict[str, str]:
    """``source`` with the project's environment activated: its ``bin`` first on ``PATH``, ``VIRTUAL_ENV``."""
    env = dict(source)
    path = env.get("PATH") or os.defpath
    env["PATH"] = os.pathsep.join([str(venv / "bin"), path])
    env["VIRTUAL_ENV"] = str(venv)
    return env


# ensurepip without byte-compiling pip (half of its time); the plain ensurepip is the fallback.
_ENSUREPIP = """
import ensurepip, sys
_run = ensurepip._run_pip
ensurepip._run_pip = lambda args, paths=None: _run([args[0], "--no-compile", *args[1:]], paths)
sys.exit(ensurepip._main(["--default-pip"]))
"""


def _trusted_run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(cwd), "PYTHONNOUSERSITE": "1"}
    return subprocess.run(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=_VENV_SECONDS, check=False
    )


def create_environment(base_python: str | Path, venv: Path) -> Path:
    """A plain venv (with pip, from the interpreter's own bundled wheels: no network) at ``venv``, made from
    ``base_python``; its interpreter. Trusted work: nothing of the project exists in it yet."""
    python = venv / "bin" / "python"
    try:
        done = _trusted_run([str(base_python), "-I", "-m", "venv", "--without-pip", str(venv)], venv.parent)
        if done.returncode == 0 and python.exists():
            done = _trusted_run([str(python), "-I", "-c", _ENSUREPIP], venv.parent)
            if done.returncode != 0:
                done = _trusted_run([str(python), "-I", "-m", "ensurepip", "--default-pip"], venv.parent)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"cannot create the project's environment with {base_python}: {exc}") from exc
    if done.returncode != 0 or not python.exists():
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        detail = lines[-1] if lines else f"exit {done.returncode}"
        raise SandboxError(f"cannot create the project's environment with {base_python}: {detail}")
    return python


def _copy_ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in IGNORED_DIR_NAMES or n.endswith(".egg-info") or n.endswith(".pyc")}


def _named_files(argv: list[str]) -> list[Path]:
    """Absolute paths of existing regular files the (trusted, configured) command line names, e.g. a script
    or a requirements file outside the repository: re-exposed read-only, nothing else of their folders."""
    found = []
    for arg in argv[1:]:
        _, _, value = arg.rpartition("=") if arg.startswith("-") else ("", "", arg)
        if os.path.isabs(value) and os.path.isfile(value):
            found.append(Path(value))
    return found


_Trusted = tuple[bytes, dict[str, str]]


def _entry_points(venv: Path) -> _Trusted:
    """What selfix itself reads of the environment, outside the sandbox, to plan the test runs' mounts
    (``isolation._needed_paths``): ``pyvenv.cfg`` (its ``home``) and the ``bin/python*`` links (their targets
    are re-exposed read-only). Recorded right after creation, before any project code runs."""
    bin_dir = venv / "bin"
    links = {p.name: os.readlink(p) for p in bin_dir.iterdir() if p.name.startswith("python") and p.is_symlink()}
    return (venv / "pyvenv.cfg").read_bytes(), links


def _seal(base: Path, venv: Path, trusted: _Trusted) -> None:
    """Undo whatever the setup did to the environment's entry points, and make them root's (when selfix is
    root), so a planted ``home = /github/workspace`` or ``bin/python -> /root/...`` never re-exposes a hidden
    path to the test runs. The setup's processes are all dead by now (session killed); nothing races this."""
    cfg, links = trusted
    bin_dir = venv / "bin"
    for path in (base, venv, bin_dir):
        if path.is_symlink() or not path.is_dir():
            raise SandboxError(f"setup_command replaced {path.relative_to(base.parent)}: the environment is not used")
    (venv / "pyvenv.cfg").unlink(missing_ok=True)
    fd = os.open(venv / "pyvenv.cfg", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(cfg)
    for name, target in links.items():
        link = bin_dir / name
        if link.is_symlink() or link.exists():
            if link.is_dir() and not link.is_symlink():
                shutil.rmtree(link)
            else:
                link.unlink()
        os.symlink(target, link)
    if os.geteuid() == 0:
        for path in (base, venv, bin_dir, venv / "pyvenv.cfg", *(bin_dir / name for name in links)):
            os.chown(path, 0, 0, follow_symlinks=False)
        for path in (base, venv, bin_dir):
            path.chmod(0o755)


def _installed(venv: Path, name: str) -> bool:
    return any(
        (site / name).is_dir() or any(site.glob(f"{name}-*.dist-info"))
        for site in (venv / "lib").glob("python*/site-packages")
    )


def run_setup_command(
    command: str,
    *,
    repo: Path,
    env_source: Mapping[str, str],
    wall_seconds: float,
    isolation: Isolation | None = None,
    base_python: str | Path | None = None,
    scratch_parent: Path | None = None,
    max_output_bytes: int = 200_000,
) -> SetupResult:
    """Run ``command`` (split like a shell would, never through one) in a scratch copy of ``repo`` with a fresh
    project environment activated, inside ``isolation`` with the network allowed.

    ``base_python``: the interpreter the environment is made from (default: selfix's, which the default test
    command would use). A non-zero exit is a result (``SetupResult.ok``; call ``close`` either way);
    ``SandboxError`` means it could not start, and nothing is left behind."""
    argv = setup_argv(command)
    repo = repo.resolve()
    base = Path(tempfile.mkdtemp(prefix="selfix-setup-", dir=scratch_parent))
    try:
        project, venv = base / "project", base / "venv"
        shutil.copytree(repo, project, ignore=_copy_ignore, symlinks=True)
        python = create_environment(base_python or sys.executable, venv)
        trusted = _entry_points(venv)
        allow = [name for name in env_source if name.startswith(_INSTALLER_PREFIXES)]
        env = sandbox_env(
            project_env_source(env_source, venv),
            allow=allow,
            extra={
                **private_dirs(base),
                "VIRTUAL_ENV": str(venv),
                "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "PYTHONNOUSERSITE": "1",
            },
        )
        env.pop("PYTHONPATH", None)  # nothing but the environment's own site-packages
        wrapped = None
        if isolation is not None and isolation.level is not IsolationLevel.NONE:
            wrapped = isolation.with_network(readable=_named_files(argv))
            wrapped.prepare([base])  # the sandbox uid must reach the environment's interpreter before the wrap
        # Installs build wheels: no CPU or address-space cap, the wall limit bounds the step.
        limits = Limits(
            wall_seconds=wall_seconds, cpu_seconds=None, memory_bytes=None, max_output_bytes=max_output_bytes
        )
        result = run_process(
            argv,
            cwd=project,
            env=env,
            limits=limits,
            isolation=wrapped,
            writable=(base,),
            hidden=(repo, *former_home(env_source, (base,))),
        )
        _seal(base, venv, trusted)
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    warnings = []
    if result.returncode == 0 and not _installed(venv, "pytest"):
        warnings.append(
            "setup_command installed no pytest into the project's environment: the heal's test runs, which use "
            f"{python}, need it (add it to the project's test dependencies)"
        )
    return SetupResult(result=result, python=python, venv=venv, project=project, base=base, warnings=tuple(warnings))
