"""The attack tests' toolkit: hostile projects run through the real sandbox (PytestSandbox / run_process +
isolation), the fake secrets they hunt for, and the interpreter each isolation level can run.

Convention for a hostile test written into a project: it PASSES only if its attack worked. So the host-side
test asserts that it FAILED, with the exception the sandbox is expected to cause, and that the canary test
after it still ran and passed (the run went on). Tests that need a given isolation level call ``need_level``
and are skipped with the reason when this machine does not provide it. Project commands use
``python_for(isolation)``, not ``sys.executable``: see there.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.repair.values import TestRun, TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import write_project

ATTACK_FILE = "tests/test_attack.py"
ATTACK = f"{ATTACK_FILE}::test_attack"
CANARY = f"{ATTACK_FILE}::test_zz_canary"
CANARY_SOURCE = "\n\ndef test_zz_canary():\n    assert 1 + 1 == 2\n"

FAKE_GITHUB_TOKEN = "ghs_selfixFAKEgithubTOKEN0123456789"
FAKE_API_KEY = "sk-ant-selfixFAKEapiKEY0123456789"
FAKE_CHECKOUT_TOKEN = "eC1hY2Nlc3MtdG9rZW46Z2hzX3NlbGZpeEZBS0VjaGVja291dA=="
FAKE_CREDENTIAL = "ghp_selfixFAKEcredentialFILE0123456789"
ALL_FAKE_SECRETS = (FAKE_GITHUB_TOKEN, FAKE_API_KEY, FAKE_CHECKOUT_TOKEN, FAKE_CREDENTIAL)

# Landlock hides files and processes and cuts the network as bwrap does, by other means (see SECURITY.md).
_LEVEL_RANK = {IsolationLevel.NONE: 0, IsolationLevel.UNSHARE: 1, IsolationLevel.LANDLOCK: 2, IsolationLevel.BWRAP: 2}


def traversable(path: Path) -> Path:
    """Let other uids walk (not list) down to ``path``: pytest makes its temp dirs 0700 and the landlock
    level, with no mount namespace, needs the sandbox uid to reach the scratch copy by its real path."""
    for folder in [path, *path.parents]:
        if folder == Path(tempfile.gettempdir()) or folder == Path("/"):
            break
        if folder.is_dir() and folder.stat().st_uid == os.geteuid():
            folder.chmod(folder.stat().st_mode | 0o111)
    return path


def home_with_git_credentials(root: Path) -> Path:
    """A caller's $HOME under ``root`` holding ``~/.git-credentials`` with FAKE_CREDENTIAL, world-readable: only
    hiding the home can stop a read."""
    home = root / "home"
    home.mkdir(mode=0o755)
    (home / ".git-credentials").write_text(f"https://x-access-token:{FAKE_CREDENTIAL}@github.com\n")
    (home / ".git-credentials").chmod(0o644)
    return home


def python_for(isolation: Isolation) -> str:
    """An interpreter (with this venv's packages) that the isolation's command can run.

    At landlock as root the command runs as the sandbox uid with no mount namespace, so the interpreter
    must be reachable by that uid. When selfix's own is not (pyenv under a 0700 /root, as on the dev box),
    a venv of the system python with this venv's site-packages stands in. The field's interpreter lives
    in the image (``/usr/local``) and needs nothing of this.
    """
    if isolation.level is not IsolationLevel.LANDLOCK or isolation.uid is None:
        return sys.executable
    return _reachable_python(isolation.uid, isolation.gid)


def run_project_at(mode: str, tmp_path: Path, files: Mapping[str, str]) -> TestRun:
    """``files`` as a project, its whole suite run once in the sandbox at isolation level ``mode`` (skipped with
    the reason where that level does not work here)."""
    try:
        isolation = detect_isolation(IsolationConfig(mode=mode))
    except SandboxError as exc:
        pytest.skip(f"isolation level {mode} is not available on this machine: {exc}")
    traversable(tmp_path)
    repo = write_project(tmp_path / "repo", dict(files))
    with sandbox_at(isolation, repo, tmp_path) as sandbox:
        return sandbox.run_tests(None)


def sandbox_at(isolation: Isolation, repo: Path, tmp_path: Path) -> PytestSandbox:
    """A sandbox over ``repo`` at ``isolation``, with the interpreter it can run and a minimal environment."""
    return PytestSandbox(
        repo,
        [python_for(isolation), "-m", "pytest"],
        limits=Limits(wall_seconds=60),
        env_source={"PATH": "/usr/bin:/bin"},
        scratch_parent=tmp_path,
        isolation=isolation,
    )


@functools.cache
def _reachable_python(uid: int, gid: int | None) -> str:
    from selfix_action.sandbox import isolation as iso_mod

    try:
        iso_mod._check_reachable(Path(sys.executable), uid, gid)
        return sys.executable
    except SandboxError:
        pass
    base = shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}", path="/usr/bin:/usr/local/bin")
    if base is None:
        pytest.skip("no system python of this version to run the landlock level with (selfix's is unreachable)")
    folder = Path(tempfile.mkdtemp(prefix="selfix-test-python-", dir="/var/tmp"))
    folder.chmod(0o755)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder / "venv")], check=True, timeout=120)
    site = Path(sysconfig.get_paths()["purelib"])
    target = folder / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (target / "selfix-test.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n", encoding="utf-8")
    import atexit

    atexit.register(shutil.rmtree, folder, True)
    return str(folder / "venv" / "bin" / "python")


def need_level(isolation: Isolation, level: IsolationLevel, what: str) -> None:
    """Skip, loudly and with the reason, when this machine's isolation is weaker than ``level``."""
    if _LEVEL_RANK[isolation.level] < _LEVEL_RANK[level]:
        pytest.skip(
            f"{what} needs isolation level {level.value}, the level in use here is {isolation.level.value} "
            f"({'; '.join(isolation.fallbacks) or isolation.mechanism})"
        )


def need_process_limit(isolation: Isolation) -> None:
    if not isolation.nproc_enforced:
        pytest.skip(
            f"the process-count limit is not enforceable at isolation {isolation.kind} "
            f"({'; '.join(isolation.warnings)}): a fork bomb would not be bounded"
        )


def hostile_project(attack: str, extra_files: Mapping[str, str] | None = None) -> dict[str, str]:
    """A project whose ``test_attack`` performs ``attack`` (a test function body) and a canary after it."""
    body = "\n".join("    " + line if line.strip() else "" for line in attack.strip("\n").splitlines())
    source = f"def test_attack():\n{body}\n{CANARY_SOURCE}"
    # testpaths: pytest must not wander into links to /etc that some attacks plant in the project.
    files = {"pkg.py": "VALUE = 1\n", ATTACK_FILE: source, "pytest.ini": "[pytest]\ntestpaths = tests\n"}
    files.update(extra_files or {})
    return files


RunAttack = Callable[..., tuple[TestRun, PytestSandbox]]


def assert_blocked(run: TestRun, *exc_types: str) -> None:
    """The attack test failed with one of ``exc_types`` and the canary after it still passed."""
    attack = run.results.get(ATTACK)
    assert attack is not None, f"the attack test did not run:\n{run.output_tail}"
    assert attack.status is TestStatus.FAILED, f"ATTACK SUCCEEDED: {attack.message}\n{run.output_tail}"
    assert attack.exc_type in exc_types, f"failed for another reason: {attack.exc_type}: {attack.message}"
    canary = run.results.get(CANARY)
    assert canary is not None and canary.status is TestStatus.PASSED, "the run did not go on after the attack"
    assert_no_secret(run)


def assert_no_secret(run: TestRun) -> None:
    text = run.output_tail + "".join(r.message for r in run.results.values())
    for secret in ALL_FAKE_SECRETS:
        assert secret not in text
