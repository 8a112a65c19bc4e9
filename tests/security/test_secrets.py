"""Secret attacks: tokens and keys in the environment, in other processes, in git config and in $HOME."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from selfix_action.sandbox.isolation import Isolation, IsolationLevel
from selfix_action.sandbox.process import Limits, run_process, sandbox_env
from tests.helpers.isolation import (
    FAKE_API_KEY,
    FAKE_CHECKOUT_TOKEN,
    FAKE_CREDENTIAL,
    FAKE_GITHUB_TOKEN,
    RunAttack,
    assert_blocked,
    home_with_git_credentials,
    need_level,
    python_for,
)
from tests.helpers.projects import REPO_ROOT

SECRET_ENV = {
    "GITHUB_TOKEN": FAKE_GITHUB_TOKEN,
    "GH_TOKEN": FAKE_GITHUB_TOKEN,
    "ACTIONS_RUNTIME_TOKEN": FAKE_GITHUB_TOKEN,
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": FAKE_GITHUB_TOKEN,
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.actions.example/" + FAKE_GITHUB_TOKEN,
    "ANTHROPIC_API_KEY": FAKE_API_KEY,
    "OPENAI_API_KEY": FAKE_API_KEY,
    "INPUT_API-KEY": FAKE_API_KEY,
}

GIT_CONFIG = f"""\
[core]
\trepositoryformatversion = 0
[remote "origin"]
\turl = https://github.com/acme/widget
[http "https://github.com/"]
\textraheader = AUTHORIZATION: basic {FAKE_CHECKOUT_TOKEN}
"""


@pytest.mark.slow
@pytest.mark.parametrize("hot", [False, True], ids=["cold", "hot"])
def test_secrets_in_the_environment_are_not_passed(run_attack: RunAttack, hot: bool) -> None:
    # Works at every isolation level: the environment is an allowlist. The attack also looks in its own
    # /proc environ and in pid 1's (bwrap's init, which got the same reduced environment).
    attack = f"""
    import os
    seen = "\\n".join(f"{{k}}={{v}}" for k, v in os.environ.items())
    for path in ("/proc/self/environ", "/proc/1/environ"):
        try:
            seen += open(path, "rb").read().decode(errors="replace")
        except OSError:
            pass
    # The secrets are written reversed so that the test's own source (shown in tracebacks) holds none.
    assert any(s[::-1] in seen for s in ({FAKE_GITHUB_TOKEN[::-1]!r}, {FAKE_API_KEY[::-1]!r})), "none found"
    """
    env = {**SECRET_ENV, "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    run, _ = run_attack(textwrap.dedent(attack), env_source=env, hot=hot)
    assert_blocked(run, "AssertionError")


PROC_SCAN = """
import json, os, sys
token = sys.argv[1].encode()
found, readable = [], []
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        data = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        continue
    readable.append(pid)
    if token in data:
        found.append(pid)
print(json.dumps({"found": found, "readable": readable, "ppid": os.getppid()}))
"""

# Runs in a separate process that, like a real CI job, has the token in its *initial* environment (what
# /proc/<pid>/environ shows; os.environ changes made later in a process do not appear there).
PARENT = """
import json, os, sys
from selfix_action.sandbox.isolation import IsolationConfig, detect_isolation
from selfix_action.sandbox.process import Limits, run_process, sandbox_env
iso = None if sys.argv[1] == "plain" else detect_isolation(IsolationConfig(mode=sys.argv[1]))
workdir = sys.argv[2]
result = run_process([sys.argv[5], "-c", sys.argv[3], sys.argv[4]], cwd=workdir,
                     env=sandbox_env(os.environ), limits=Limits(wall_seconds=60),
                     isolation=iso, writable=[workdir])
print(result.stdout, end="")
print(result.stderr, file=sys.stderr, end="")
"""


def _scan_from_a_parent_holding_the_token(mode: str, workdir: Path, python: str = sys.executable) -> dict[str, object]:
    env = {**os.environ, **SECRET_ENV, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PARENT, mode, str(workdir), PROC_SCAN, FAKE_GITHUB_TOKEN, python],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_parent_process_environ_cannot_be_read(isolation: Isolation, tmp_path: Path) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "hiding other processes")
    if isolation.kind == "unshare-root-net":
        need_level(isolation, IsolationLevel.BWRAP, "hiding other processes (no pid namespace here)")
    workdir = tmp_path / "work"
    workdir.mkdir()
    workdir.chmod(0o777)  # the sandbox uid writes nothing here, but must enter it
    isolated = _scan_from_a_parent_holding_the_token(isolation.level.value, workdir, python_for(isolation))
    assert isolated["found"] == [], isolated
    assert FAKE_GITHUB_TOKEN not in json.dumps(isolated)
    # Control: without isolation the very same scan finds the token in selfix's own environ.
    control = _scan_from_a_parent_holding_the_token("plain", workdir)
    assert control["found"], "control run could not read the parent's environ: the test proves nothing"


@pytest.mark.slow
@pytest.mark.parametrize("hot", [False, True], ids=["cold", "hot"])
def test_original_repo_git_config_token_is_unreachable(run_attack: RunAttack, isolation: Isolation, hot: bool) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "hiding the original repository")
    holder: dict[str, Path] = {}

    def add_git_dir(repo: Path) -> None:
        (repo / ".git").mkdir()
        (repo / ".git" / "config").write_text(GIT_CONFIG)
        holder["repo"] = repo

    # The attack gets the original path baked in (a real one would guess /home/runner/work/<r>/<r>), and
    # also walks up from its working directory looking for any .git/config.
    attack = """
    import os, pathlib
    texts = []
    for candidate in [pathlib.Path(ORIGINAL) / ".git" / "config",
                      *(p / ".git" / "config" for p in pathlib.Path.cwd().parents)]:
        try:
            texts.append(candidate.read_text())
        except OSError as exc:
            last = exc
    assert any("extraheader" in t for t in texts), f"no git credentials found; last error: {last!r}"
    """
    # ORIGINAL is only known once the project exists; the attack resolves it from a file written then.
    attack = "ORIGINAL = open('original_path.txt').read()\n" + textwrap.dedent(attack)

    def prepare(repo: Path) -> None:
        add_git_dir(repo)
        (repo / "original_path.txt").write_text(str(repo))

    run, sandbox = run_attack(attack, prepare=prepare, hot=hot)
    assert_blocked(run, "AssertionError")
    assert not (sandbox.root / ".git").exists(), "the scratch copy must not contain .git"
    assert not any(FAKE_CHECKOUT_TOKEN in p.read_text(errors="replace") for p in sandbox.root.rglob("*") if p.is_file())
    assert FAKE_CHECKOUT_TOKEN in (holder["repo"] / ".git" / "config").read_text()  # it was there to steal


@pytest.mark.slow
@pytest.mark.parametrize("hot", [False, True], ids=["cold", "hot"])
def test_git_credentials_in_home_are_unreachable(
    run_attack: RunAttack, isolation: Isolation, tmp_path: Path, hot: bool
) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "hiding $HOME")
    home = home_with_git_credentials(tmp_path)
    attack = f"""
    import os
    texts = []
    for path in (os.path.expanduser("~/.git-credentials"), {str(home / ".git-credentials")!r}):
        try:
            texts.append(open(path).read())
        except OSError as exc:
            last = exc
    assert texts, f"could not read any credentials file: {{last!r}}"
    """
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    run, _ = run_attack(textwrap.dedent(attack), env_source=env, hot=hot)
    assert_blocked(run, "AssertionError")
    # bwrap: the file is not there (hidden HOME); landlock: ~ is a private HOME, the real path is refused.
    message = run.results["tests/test_attack.py::test_attack"].message
    assert "No such file" in message or "Permission denied" in message, message


def test_users_home_cannot_be_read(run_attack: RunAttack, isolation: Isolation) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "hiding $HOME")
    real_home = Path(os.path.expanduser("~")).resolve()
    files = sorted(str(p) for p in real_home.iterdir() if p.is_file()) if real_home.is_dir() else []
    attack = f"""
    import os
    stolen = {{}}
    for path in {files!r} + [os.path.expanduser("~/.bashrc"), os.path.expanduser("~/.gitconfig")]:
        try:
            stolen[path] = open(path, "rb").read()
        except OSError:
            pass
    listing = [n for n in os.listdir({str(real_home)!r})] if os.path.isdir({str(real_home)!r}) else []
    assert stolen or any(not os.path.isdir(os.path.join({str(real_home)!r}, n)) for n in listing), listing
    """
    run, _ = run_attack(textwrap.dedent(attack))
    assert_blocked(run, "AssertionError", "PermissionError")  # landlock: listing the home is refused


def test_hidden_paths_outside_tmp_are_hidden_too(isolation: Isolation, tmp_path: Path, outside_tmp: Path) -> None:
    # The attack projects above live under /tmp, which is private anyway. This proves the hiding itself on
    # a directory outside /tmp (selfix's own checkout, only read): visible without, gone with ``hidden``.
    need_level(isolation, IsolationLevel.BWRAP, "hiding paths")
    if isolation.level is IsolationLevel.LANDLOCK:
        # Landlock is an allowlist: /var/cache is unreadable anyway. Allow it explicitly, and ``hidden`` must
        # still win over ``readable_paths``.
        config = dataclasses.replace(isolation.config, readable_paths=(str(outside_tmp),))
        isolation = dataclasses.replace(isolation, config=config)
    target = outside_tmp / "pyproject.toml"
    code = [python_for(isolation), "-c", f"print(open({str(target)!r}).read()[:20])"]
    env = sandbox_env(os.environ)
    limits = Limits(wall_seconds=60)
    seen = run_process(code, cwd=tmp_path, env=env, limits=limits, isolation=isolation, writable=[tmp_path])
    assert seen.returncode == 0 and "[build-system]" in seen.stdout, seen.stderr
    hidden = run_process(
        code,
        cwd=tmp_path,
        env=env,
        limits=limits,
        isolation=isolation,
        writable=[tmp_path],
        hidden=[outside_tmp],
    )
    assert hidden.returncode == 1 and ("FileNotFoundError" in hidden.stderr or "PermissionError" in hidden.stderr)
    assert_no_secret_in(hidden.stdout)


def assert_no_secret_in(text: str) -> None:
    for secret in (FAKE_GITHUB_TOKEN, FAKE_API_KEY, FAKE_CHECKOUT_TOKEN, FAKE_CREDENTIAL):
        assert secret not in text
