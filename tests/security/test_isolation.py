"""Detection, fallback and the exact bubblewrap command line (no bwrap needed for most of these)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.sandbox import confine as confine_mod
from selfix_action.sandbox import isolation as iso_mod
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits, run_process, sandbox_env

BWRAP_ROOT = Isolation(
    level=IsolationLevel.BWRAP,
    mechanism="test",
    kind="bwrap-root",
    tool="/usr/bin/bwrap",
    setpriv="/usr/bin/setpriv",
    uid=65534,
    gid=65534,
    nproc_enforced=True,
)


def test_the_level_detected_here_is_reported(isolation: Isolation) -> None:
    report = isolation.report()
    assert report["level"] in {"bwrap", "landlock", "unshare", "none"}
    assert isolation.summary()
    print(f"\nisolation on this machine: {isolation.summary()} {report}")  # visible with -s / -rA


def _which_without(*missing: str, fake: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    real = shutil.which

    def which(name: str, *args: object, **kwargs: object) -> str | None:
        if fake and name in fake:
            return fake[name]
        if name in missing:
            return None
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    return which


def test_without_any_tool_the_level_is_none_with_a_loud_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine_mod, "landlock_abi", lambda: 0)  # a kernel without Landlock
    monkeypatch.setattr(iso_mod.shutil, "which", _which_without("bwrap", "unshare"))
    found = detect_isolation(IsolationConfig())
    assert found.level is IsolationLevel.NONE
    assert found.summary().startswith("WARNING: NO ISOLATION")
    assert "bwrap: not installed" in found.fallbacks and "unshare: not installed" in found.fallbacks
    assert found.report()["level"] == "none"


def test_require_isolation_refuses_to_run_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine_mod, "landlock_abi", lambda: 0)  # a kernel without Landlock
    monkeypatch.setattr(iso_mod.shutil, "which", _which_without("bwrap", "unshare"))
    with pytest.raises(SandboxError, match="require_isolation"):
        detect_isolation(IsolationConfig(require_isolation=True))
    with pytest.raises(SandboxError, match="'bwrap' is not available"):
        detect_isolation(IsolationConfig(mode="bwrap"))


def test_a_bwrap_that_fails_its_probe_is_not_used_and_the_reason_is_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(confine_mod, "landlock_abi", lambda: 0)  # a kernel without Landlock
    # What bwrap says in a Docker container with the default seccomp profile.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(iso_mod.shutil, "which", _which_without("unshare", fake={"bwrap": str(fake)}))
    found = detect_isolation(IsolationConfig())
    assert found.level is IsolationLevel.NONE
    assert any("Creating new namespace failed" in reason for reason in found.fallbacks), found.fallbacks


def test_a_wrapper_that_does_not_isolate_is_caught_by_the_probe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(confine_mod, "landlock_abi", lambda: 0)  # a kernel without Landlock
    # A "bwrap" that just runs the command: the probe sees the host's network namespace and refuses it.
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift\nexec "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setattr(iso_mod.shutil, "which", _which_without("unshare", fake={"bwrap": str(fake)}))
    found = detect_isolation(IsolationConfig())
    assert found.level is IsolationLevel.NONE
    assert any("still in the host network namespace" in r for r in found.fallbacks), found.fallbacks


def test_bwrap_command_line_as_root(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "original"
    scratch = tmp_path / "scratch"
    for d in (home, repo, scratch):
        d.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    argv = BWRAP_ROOT.wrap([sys.executable, "-m", "pytest"], cwd=scratch, env=env, writable=[scratch], hidden=[repo])
    cmd = " ".join(argv)
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session", "--ro-bind / /"):
        assert flag in cmd
    assert "--share-net" not in cmd
    assert "--proc /proc" in cmd and "--dev /dev" in cmd
    assert "--perms 1777 --tmpfs /tmp" in cmd
    assert f"--bind {scratch.resolve()} {scratch.resolve()}" in cmd
    # Without a user namespace (it would map the sandbox uid to host root), setpriv drops to 65534.
    assert "--unshare-user" not in cmd and "--unshare-all" not in cmd
    assert argv[argv.index("--") + 1 :][:4] == ["/usr/bin/setpriv", "--reuid", "65534", "--regid"]
    assert argv[-3:] == [sys.executable, "-m", "pytest"]


def test_hidden_paths_in_the_plan_when_not_under_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outside_tmp: Path
) -> None:
    # /tmp is private anyway; hiding must also work for a repository and a HOME elsewhere (a runner's
    # /home/runner/work/r/r). Paths are only planned here, nothing is created outside tmp_path.
    home = Path("/root") if Path("/root").is_dir() else Path("/home")
    repo = outside_tmp  # stands in for the original repo (e.g. /home/runner/work/r/r)
    monkeypatch.setenv("HOME", str(home))
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    argv = BWRAP_ROOT.wrap(["true"], cwd=tmp_path, env=env, writable=[tmp_path], hidden=[repo])
    cmd = " ".join(argv)
    assert f"--tmpfs {repo}" in cmd and f"--remount-ro {repo}" in cmd
    assert f"--tmpfs {home}" in cmd
    assert "--tmpfs /run" in cmd  # the docker socket and /run/secrets


def test_an_interpreter_installed_in_home_never_re_exposes_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    python = home / "bin" / "python"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    (home / ".git-credentials").write_text("x")
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    scratch = tmp_path / "s"
    scratch.mkdir()
    argv = BWRAP_ROOT.wrap([str(python)], cwd=scratch, env=env, writable=[scratch])
    pairs = {(argv[i], argv[i + 1]) for i in range(len(argv) - 1)}
    assert ("--ro-bind", str(home)) not in pairs


def test_a_writable_path_that_contains_a_hidden_one_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "nohome")}
    with pytest.raises(SandboxError, match="refusing to make"):
        BWRAP_ROOT.wrap(["true"], cwd=tmp_path, env=env, writable=[tmp_path], hidden=[repo])
    with pytest.raises(SandboxError, match="refusing to make"):
        BWRAP_ROOT.wrap(["true"], cwd=tmp_path, env=env, writable=["/"])


def test_missing_command_is_a_sandbox_error_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="test command not found"):
        BWRAP_ROOT.wrap(["selfix-no-such-command"], cwd=tmp_path, env={"PATH": "/usr/bin"})


@pytest.mark.skipif(os.geteuid() != 0, reason="handing the scratch dir to the sandbox uid happens only as root")
def test_chown_of_the_scratch_copy_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "file"
    target.write_text("x")
    scratch = tmp_path / "scratch"
    (scratch / "sub").mkdir(parents=True)
    (scratch / "sub" / "mine.txt").write_text("y")
    (scratch / "link_dir").symlink_to(outside)
    (scratch / "link_file").symlink_to(target)
    os.link(target, scratch / "hardlink")  # a hard link to a file outside is skipped, not chowned
    BWRAP_ROOT.prepare([scratch])
    assert (scratch / "sub" / "mine.txt").stat().st_uid == 65534
    assert (scratch / "sub").stat().st_uid == 65534
    assert os.lstat(scratch / "link_dir").st_uid == 65534
    assert outside.stat().st_uid == 0 and target.stat().st_uid == 0


def test_signal_exit_codes_are_reported_as_negative_signals() -> None:
    assert BWRAP_ROOT.exit_status(128 + signal.SIGXCPU) == -signal.SIGXCPU
    assert BWRAP_ROOT.exit_status(1) == 1
    assert BWRAP_ROOT.exit_status(None) is None
    assert iso_mod.no_isolation().exit_status(152) == 152


def test_process_limit_only_where_the_kernel_enforces_it() -> None:
    assert BWRAP_ROOT.process_limit(64) == 64
    assert BWRAP_ROOT.process_limit(None) is None
    assert iso_mod.no_isolation().process_limit(64) is None


@pytest.mark.parametrize(
    "kwargs", [{"mode": "docker"}, {"sandbox_uid": 0}, {"require_isolation": True, "mode": "none"}]
)
def test_bad_isolation_config_is_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        IsolationConfig(**kwargs)  # type: ignore[arg-type]


def test_max_processes_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Limits(max_processes=0)


def test_run_process_reports_the_level_it_ran_under(isolation: Isolation, tmp_path: Path) -> None:
    plain = run_process(["true"], cwd=tmp_path, env=sandbox_env(os.environ))
    assert plain.isolation == "none"
    wrapped = run_process(["true"], cwd=tmp_path, env=sandbox_env(os.environ), isolation=isolation, writable=[tmp_path])
    assert wrapped.returncode == 0, wrapped.stderr
    assert wrapped.isolation == isolation.level.value
