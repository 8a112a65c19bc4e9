"""The setup command (``pip install -e .``) inside the boundary, with real installs of a tiny local project.

Installs run offline: setuptools comes from the local pip cache (a wheel copied into the project), the project
and its one dependency are local folders (``--no-index --no-build-isolation``). The heal's test runs need
pytest in the project's environment; with no index to install it from, the setup command's last step adds a
``.pth`` to the environment naming selfix's site-packages (what ``pip install pytest`` would give it). Every
test runs at the best level and at ``landlock`` (the ``isolation`` fixture of tests/conftest.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from selfix_action.errors import InputError
from selfix_action.heal import HealRequest
from selfix_action.heal.pipeline import HealContext, heal
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.isolation import python_for
from tests.helpers.project_setup import (
    SELFIX_SITE,
    TEST_ID,
    env_source,
    heal_sandbox,
    install_command,
    run_setup,
    site_packages,
    tiny_project,
)

# The landlock level reaches the scratch copies by their real paths under tmp_path.
pytestmark = pytest.mark.usefixtures("traversable_tmp_path")


@pytest.mark.slow
def test_setup_installs_into_its_own_environment_and_the_scratch_copy_wins(
    tmp_path: Path, isolation: Isolation
) -> None:
    repo = tiny_project(tmp_path / "repo")
    setup = run_setup(repo, isolation)
    try:
        assert setup.ok, setup.result.stdout + setup.result.stderr
        site = site_packages(setup.venv)
        assert any(site.glob("__editable__*tinypkg*")), sorted(os.listdir(site))  # a real editable install
        assert (site / "tinydep.py").is_file()
        # selfix's interpreter got nothing; the workspace got no build files
        assert importlib.util.find_spec("tinydep") is None
        assert not list(Path(SELFIX_SITE).glob("tinydep*")) and not list(Path(SELFIX_SITE).glob("*tinypkg*"))
        assert not list(repo.glob("*.egg-info")) and not (repo / "build").exists()
        assert len(setup.warnings) == 1  # the stand-in is no installed pytest: selfix says so
        with heal_sandbox(repo, setup, isolation, tmp_path) as sandbox:
            before = sandbox.run_tests([TEST_ID])
            assert before.results[TEST_ID].status is TestStatus.FAILED, before.output_tail
            assert "original" in before.results[TEST_ID].message
            # the editable install points at the setup's copy, which says "original": the scratch copy wins
            with sandbox.patched({"tinypkg/__init__.py": 'VALUE = "patched"\n'}):
                after = sandbox.run_tests([TEST_ID])
            assert after.results[TEST_ID].status is TestStatus.PASSED, after.output_tail
    finally:
        setup.close()
    assert not setup.base.exists()


def test_setup_runs_as_the_sandbox_uid_with_the_network_and_tests_stay_offline(
    tmp_path: Path, isolation: Isolation
) -> None:
    probe = """import json, os, socket
report = {"uid": os.getuid(), "venv": os.environ.get("VIRTUAL_ENV"), "path0": os.environ["PATH"].split(":")[0]}
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()
    report["inet"] = "ok"
except OSError as exc:
    report["inet"] = repr(exc)
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
    report["netlink"] = "ok"
except OSError as exc:
    report["netlink"] = type(exc).__name__
report["net_ns"] = os.readlink("/proc/self/ns/net")
open("probe.json", "w").write(json.dumps(report))
"""
    repo = tiny_project(tmp_path / "repo", {"probe.py": probe})
    setup = run_setup(repo, isolation, command="python probe.py")
    try:
        assert setup.ok, setup.result.stderr
        report = json.loads((setup.project / "probe.json").read_text())
        assert report["uid"] == (isolation.uid if isolation.uid is not None else os.getuid())
        assert report["venv"] == str(setup.venv) and report["path0"] == str(setup.venv / "bin")
        assert report["inet"] == "ok"
        if isolation.level is IsolationLevel.LANDLOCK:
            assert report["netlink"] == "OSError"  # only AF_UNIX, AF_INET, AF_INET6
        if isolation.level is IsolationLevel.BWRAP:
            assert report["net_ns"] == os.readlink("/proc/self/ns/net")  # the host's network, for setup only
        assert "pytest" in setup.warnings[0]  # nothing installed pytest into the environment
    finally:
        setup.close()


def test_the_network_option_changes_nothing_else(tmp_path: Path, isolation: Isolation) -> None:
    argv = [python_for(isolation), "-c", "pass"]
    env = {"PATH": os.defpath, "HOME": str(tmp_path)}
    offline = isolation.wrap(argv, cwd=tmp_path, env=env, writable=[tmp_path])
    online = isolation.with_network().wrap(argv, cwd=tmp_path, env=env, writable=[tmp_path])
    assert isolation.with_network().network and not isolation.network
    if isolation.level is IsolationLevel.LANDLOCK:
        policy_off, policy_on = json.loads(offline[4]), json.loads(online[4])
        assert policy_off.pop("network") is False and policy_on.pop("network") is True
        assert policy_off == policy_on
    elif isolation.kind == "bwrap-root":
        assert "--unshare-net" in offline and "--unshare-net" not in online
        assert [a for a in offline if a != "--unshare-net"] == online
    elif isolation.kind == "bwrap-user":
        assert online == [*offline[:2], "--share-net", *offline[2:]]


def test_a_failing_setup_is_a_result_and_leaves_nothing(tmp_path: Path, isolation: Isolation) -> None:
    repo = tiny_project(tmp_path / "repo")
    setup = run_setup(repo, isolation, command="python -c 'raise SystemExit(3)'")
    assert not setup.ok and setup.result.returncode == 3
    setup.close()
    assert not setup.base.exists()


@pytest.mark.slow
def test_the_heal_runs_its_tests_with_the_project_environment(tmp_path: Path) -> None:
    """The pipeline: the default test command becomes ``<venv>/bin/python -m pytest``, the environment is
    activated for the test runs, and it is gone after the heal."""
    from selfix_action.heal.request import resolve_test_cmd
    from selfix_action.sandbox.isolation import detect_isolation

    isolation = detect_isolation(IsolationConfig())
    if isolation.level is IsolationLevel.LANDLOCK and python_for(isolation) != sys.executable:
        pytest.skip("selfix's interpreter is not reachable by the sandbox uid at landlock here")
    repo = tiny_project(tmp_path / "repo")
    seen: dict[str, object] = {}

    def healer(context: HealContext):  # type: ignore[no-untyped-def]
        request = context.request
        seen["test_cmd"] = request.test_cmd
        seen["path"] = (request.env_source or {})["PATH"]
        with PytestSandbox(
            request.repo, request.test_cmd, env_source=request.env_source, isolation=context.isolation, hot=False
        ) as sandbox:
            with sandbox.patched({"tinypkg/__init__.py": 'VALUE = "patched"\n'}):
                seen["run"] = sandbox.run_tests([TEST_ID])
        from selfix_action.heal.pipeline import _nothing_failing

        return _nothing_failing(request).result

    request = HealRequest(
        repo=repo,
        test_cmd=resolve_test_cmd(None, repo),
        out_dir=repo / ".selfix",
        env_source=env_source(),
        setup_command=install_command(),
        setup_seconds=240,
    )
    heal(request, healer=healer)
    program = Path(seen["test_cmd"][0])  # type: ignore[index]
    assert program.name == "python" and program.parent.parent.name == "venv", seen["test_cmd"]
    assert seen["test_cmd"][1:] == ("-m", "pytest")  # type: ignore[index]
    assert str(seen["path"]).split(os.pathsep)[0] == str(program.parent)
    run = seen["run"]
    assert run.results[TEST_ID].status is TestStatus.PASSED, run.output_tail  # type: ignore[attr-defined]
    assert not program.parent.parent.parent.exists()  # the environment is removed with the heal


def test_a_failing_setup_command_stops_the_heal_before_any_output(tmp_path: Path) -> None:
    repo = tiny_project(tmp_path / "repo")
    request = HealRequest(
        repo=repo,
        test_cmd=(sys.executable, "-m", "pytest"),
        out_dir=repo / ".selfix",
        env_source=env_source(),
        setup_command="python -c 'raise SystemExit(4)'",
        isolation=IsolationConfig(mode="none"),
    )
    with pytest.raises(InputError, match="exited with 4"):
        heal(request, healer=lambda context: pytest.fail("the heal ran"))  # type: ignore[arg-type,return-value]
    assert not (repo / ".selfix").exists()


@pytest.mark.parametrize("kind", ["unshare-root", "unshare-user", "unshare-root-net", "unshare-user-net"])
def test_unshare_with_the_network_keeps_only_the_pid_namespace(tmp_path: Path, kind: str) -> None:
    unshare = Isolation(level=IsolationLevel.UNSHARE, mechanism="test", kind=kind, tool="/usr/bin/unshare")
    env = {"PATH": os.defpath}
    online = unshare.with_network().wrap(["true"], cwd=tmp_path, env=env)
    offline = unshare.wrap(["true"], cwd=tmp_path, env=env)
    assert "--net" in offline and "--net" not in online
    if kind.endswith("-net"):
        assert online == ["true"]  # only a network namespace to drop: nothing is left
    else:
        assert "--pid" in online and "--mount-proc" in online
