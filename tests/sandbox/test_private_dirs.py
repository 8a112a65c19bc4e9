"""Tests get the writable home, cache, config and temp dirs a CI job gives them, at every isolation level, and the
home the caller's environment names is neither written nor (where the level hides files) readable.

Before: with ``HOME`` naming a folder that does not exist for the sandbox (``/nonexistent``, the sandbox uid's
own home; ``/home/runner`` in a container), ``~/.cache/<x>`` was a read-only file system at bwrap, and at unshare
and none the tests wrote into the real home.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.isolation import python_for, traversable
from tests.helpers.projects import write_project

# Each test writes where tools write in CI; test_former_home tries the home the caller's environment named.
PROJECT = {
    "pytest.ini": "[pytest]\ntestpaths = tests\n",
    "tests/test_dirs.py": """
        import os
        import pathlib
        import tempfile

        FORMER = pathlib.Path({former!r})


        def test_home_cache():
            folder = pathlib.Path("~/.cache/proj").expanduser()
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "index").write_text("1")


        def test_xdg_dirs():
            for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
                folder = pathlib.Path(os.environ[name]) / "proj"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "f").write_text(name)
            assert os.environ["XDG_CACHE_HOME"] == os.path.expanduser("~/.cache")


        def test_temp_dir():
            with tempfile.NamedTemporaryFile() as handle:
                handle.write(b"1")
            assert tempfile.gettempdir() == os.environ["TMPDIR"]


        def test_home_is_not_the_former_one():
            assert pathlib.Path.home() != FORMER


        def test_former_home():
            (FORMER / "planted").write_text("x")
        """,
}
PASS_EVERYWHERE = ("test_home_cache", "test_xdg_dirs", "test_temp_dir", "test_home_is_not_the_former_one")


@pytest.fixture(params=["none", "unshare", "bwrap", "landlock"])
def level(request: pytest.FixtureRequest) -> Isolation | None:
    if request.param == "none":
        return None
    try:
        return detect_isolation(IsolationConfig(mode=request.param))
    except SandboxError as exc:
        pytest.skip(f"isolation level {request.param} is not available on this machine: {exc}")


@pytest.fixture
def sandbox_for(tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    made: list[PytestSandbox] = []

    def make(isolation: Isolation | None, home: Path) -> PytestSandbox:
        traversable(tmp_path)
        files = {**PROJECT, "tests/test_dirs.py": PROJECT["tests/test_dirs.py"].format(former=str(home))}
        repo = write_project(tmp_path / "repo", files)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
        python = python_for(isolation) if isolation is not None else sys.executable
        sandbox = PytestSandbox(
            repo,
            [python, "-m", "pytest"],
            limits=Limits(wall_seconds=60),
            env_source=env,
            scratch_parent=tmp_path,
            isolation=isolation,
        )
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()


def _statuses(sandbox: PytestSandbox, warm: bool = False) -> dict[str, TestStatus]:
    run = sandbox.run_tests(warm=warm)
    return {nodeid.split("::")[-1]: result.status for nodeid, result in run.results.items()}


def test_a_home_that_does_not_exist_for_the_sandbox(level: Isolation | None, sandbox_for, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "nonexistent"
    sandbox = sandbox_for(level, missing)
    statuses = _statuses(sandbox)
    assert all(statuses[name] is TestStatus.PASSED for name in PASS_EVERYWHERE), statuses
    assert statuses["test_former_home"] is TestStatus.FAILED  # no such folder, and nothing made it
    assert not missing.exists()


def test_the_real_home_is_neither_written_nor_hidden_less(level: Isolation | None, sandbox_for, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    home.mkdir(mode=0o777)
    home.chmod(0o777)  # even writable by the sandbox uid: only hiding (or no longer naming it) protects it
    sandbox = sandbox_for(level, home)
    for warm in (False, True):  # a cold run and the warm worker's
        statuses = _statuses(sandbox, warm=warm)
        assert all(statuses[name] is TestStatus.PASSED for name in PASS_EVERYWHERE), statuses
    assert not (home / ".cache").exists() and not (home / ".config").exists()
    hides = level is not None and level.level in (IsolationLevel.BWRAP, IsolationLevel.LANDLOCK)
    if hides:
        assert statuses["test_former_home"] is TestStatus.FAILED
        assert not (home / "planted").exists()
    else:  # no filesystem boundary: a test that names the path on purpose reaches it (documented)
        assert statuses["test_former_home"] is TestStatus.PASSED


# black's shape: a tool caches, under ~/.cache, what it did to a file; a later run of other code reads that.
CACHING = {
    "tool.py": "def version():\n    return 1\n",
    "tests/test_tool.py": """
        import os
        import pathlib

        import tool


        def test_no_earlier_run_left_a_cache():
            cache = pathlib.Path(os.environ["XDG_CACHE_HOME"]) / "tool" / "seen"
            earlier = cache.read_text() if cache.exists() else None
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(str(tool.version()))
            assert earlier is None, "version " + earlier + " left its cache"
        """,
}


def test_each_run_starts_with_an_empty_cache_cold_warm_and_hot(make_sandbox) -> None:  # type: ignore[no-untyped-def]
    from selfix_action.repair.values import CandidateCheck

    sandbox = make_sandbox(CACHING)
    nodeid = "tests/test_tool.py::test_no_earlier_run_left_a_cache"
    # Cold runs, then the warm worker's forks (the whole suite), then its hot checks (named tests).
    for warm, named in ((False, True), (False, True), (True, False), (True, False), (True, True)):
        run = sandbox.run_tests([nodeid] if named else None, warm=warm)
        assert run.results[nodeid].status is TestStatus.PASSED, run.output_tail
    # Candidates checked in the hot worker, one batch after another (each a forked child of one process).
    for version in (2, 3):
        files = {"tool.py": f"def version():\n    return {version}\n"}
        [run] = sandbox.check_candidates([CandidateCheck(files=files, nodeids=(nodeid,))])
        assert run.results[nodeid].status is TestStatus.PASSED, run.output_tail
    assert (sandbox.warm_runs, sandbox.hot_runs) == (5, 3)
    # The rest of the home is the job's for the whole heal, as in CI.
    assert (Path(sandbox._private_env["HOME"]) / ".cache").is_dir()
