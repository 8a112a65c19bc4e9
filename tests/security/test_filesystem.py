"""Filesystem attacks: nothing outside the scratch copy can be written, not even through a planted link."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from selfix_action.sandbox.isolation import Isolation, IsolationLevel
from selfix_action.sandbox.process import Limits, run_process, sandbox_env
from tests.helpers.isolation import RunAttack, assert_blocked, need_level, python_for
from tests.helpers.projects import REPO_ROOT

WRITE_ALL = """
import json, os
written, errors = [], []
for path in json.load(open("targets.json")):
    try:
        with open(path, "w") as handle:
            handle.write("pwned")
        written.append(path)
    except OSError as exc:
        errors.append(f"{path}: {exc.strerror}")
assert written, "; ".join(errors)
"""


def _targets(repo: Path, targets: list[str]) -> None:
    import json

    (repo / "targets.json").write_text(json.dumps(targets))


def test_writes_outside_the_scratch_copy_fail(run_attack: RunAttack, isolation: Isolation, tmp_path: Path) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "a read-only filesystem")
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # anyone may write here: only the sandbox can stop it
    holder: dict[str, Path] = {}

    def prepare(repo: Path) -> None:
        holder["repo"] = repo
        _targets(
            repo,
            [
                str(outside / "pwned.txt"),  # a world-writable dir on the host
                str(repo / "pkg.py"),  # the original repository
                str(REPO_ROOT / "selfix-pwned.txt"),  # selfix's own checkout
                "/etc/selfix-pwned",
                # Not $HOME or /tmp: inside they are private, empty tmpfs, writable and thrown away.
            ],
        )

    try:
        run, sandbox = run_attack(WRITE_ALL, prepare=prepare)
        assert_blocked(run, "AssertionError")
        assert not (outside / "pwned.txt").exists()
        assert (holder["repo"] / "pkg.py").read_text() == "VALUE = 1\n"
        assert not (REPO_ROOT / "selfix-pwned.txt").exists()
        assert not Path("/etc/selfix-pwned").exists()
        assert (sandbox.root / "pkg.py").read_text() == "VALUE = 1\n"
    finally:  # only reached with something to clean if the sandbox is broken
        for leftover in (REPO_ROOT / "selfix-pwned.txt", Path("/etc/selfix-pwned")):
            leftover.unlink(missing_ok=True)


def test_writes_through_a_symlink_planted_in_the_repo_fail(
    run_attack: RunAttack, isolation: Isolation, tmp_path: Path
) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "a read-only filesystem")
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)
    victim = outside / "victim.txt"
    victim.write_text("original")
    victim.chmod(0o666)

    def prepare(repo: Path) -> None:
        (repo / "data").symlink_to(outside)  # a directory link out of the repository
        (repo / "victim_link.txt").symlink_to(victim)  # a file link out of the repository
        (repo / "etc_link").symlink_to("/etc")
        _targets(repo, ["data/pwned.txt", "victim_link.txt", "etc_link/selfix-pwned"])

    try:
        run, sandbox = run_attack(WRITE_ALL, prepare=prepare)
        assert_blocked(run, "AssertionError")
        assert not (outside / "pwned.txt").exists()
        assert victim.read_text() == "original"
        assert not Path("/etc/selfix-pwned").exists()
        # Handing the scratch copy to the sandbox uid must not have followed the links either.
        assert outside.stat().st_uid == os.geteuid()
        assert victim.stat().st_uid == os.geteuid()
        assert (sandbox.root / "data").is_symlink()
    finally:
        Path("/etc/selfix-pwned").unlink(missing_ok=True)


@pytest.mark.parametrize("home_under_tmp", [False, True], ids=["home-as-is", "home-under-tmp"])
def test_the_scratch_copy_and_a_private_tmp_stay_writable(
    isolation: Isolation, tmp_path: Path, home_under_tmp: bool
) -> None:
    # The other side of the boundary: what a test suite legitimately needs still works, also when HOME itself
    # lives under /tmp (covered by the private /tmp, it must still exist and be writable inside).
    need_level(isolation, IsolationLevel.BWRAP, "a read-only filesystem")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = sandbox_env(os.environ)
    if home_under_tmp:
        (tmp_path / "home").mkdir()
        env["HOME"] = str(tmp_path / "home")
    code = """
        import os, tempfile, pathlib
        pathlib.Path("out.txt").write_text("ok")
        with tempfile.NamedTemporaryFile() as handle:
            handle.write(b"x")
        pathlib.Path(os.path.expanduser("~/.cache")).mkdir(exist_ok=True)
        print(os.getuid())
    """
    result = run_process(
        [python_for(isolation), "-c", textwrap.dedent(code)],
        cwd=scratch,
        env=env,
        limits=Limits(wall_seconds=60),
        isolation=isolation,
        writable=[scratch],
    )
    assert result.returncode == 0, result.stderr
    assert (scratch / "out.txt").read_text() == "ok"
    if os.geteuid() == 0:
        assert int(result.stdout) == isolation.uid != 0  # never root inside
