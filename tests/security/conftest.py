"""Attack tests: hostile projects run through the real sandbox (the toolkit: tests/helpers/isolation.py).

Every test that takes the ``isolation`` fixture (directly or through ``run_attack``) runs twice: at the best
level this machine has (``best``: bwrap here) and at the namespace-free ``landlock`` level that the GitHub
Docker action falls back to (the fixture is in tests/conftest.py). Tests that need a given isolation level are
skipped with the reason (what was tried and why it failed) when this machine does not provide it: they never
pass silently without it.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from selfix_action.repair.values import TestRun
from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.isolation import ATTACK, CANARY, RunAttack, hostile_project, python_for, traversable
from tests.helpers.projects import write_project


@pytest.fixture(autouse=True)
def _traversable_tmp(request: pytest.FixtureRequest) -> None:
    if "tmp_path" in request.fixturenames:
        traversable(request.getfixturevalue("tmp_path"))


@pytest.fixture
def run_attack(tmp_path: Path, isolation: Isolation) -> Iterator[RunAttack]:
    """Write a hostile project and run its whole suite once in a real, isolated PytestSandbox."""
    made: list[PytestSandbox] = []
    # The scratch copies live outside pytest's own temp root: any pytest session of this user (an xdist worker's
    # first tmp_path, a plain pytest run a test starts) takes group and other bits off /tmp/pytest-of-<user>
    # again, and the landlock level, with no mount namespace, needs the sandbox uid to walk to the copy.
    scratch = Path(tempfile.mkdtemp(prefix="selfix-attack-", dir=tempfile.gettempdir()))
    scratch.chmod(0o711)

    def run(
        attack: str,
        *,
        extra_files: Mapping[str, str] | None = None,
        limits: Limits | None = None,
        env_source: Mapping[str, str] | None = None,
        prepare: Callable[[Path], None] | None = None,
        use_isolation: Isolation | None = None,
        warm: bool = False,
        hot: bool = False,
    ) -> tuple[TestRun, PytestSandbox]:
        repo = write_project(tmp_path / f"repo{len(made)}", hostile_project(attack, extra_files))
        if prepare is not None:
            prepare(repo)
        sandbox = PytestSandbox(
            repo,
            [python_for(use_isolation or isolation), "-m", "pytest"],
            limits=limits or Limits(wall_seconds=60),
            env_source=env_source,
            scratch_parent=scratch,
            isolation=use_isolation or isolation,
        )
        made.append(sandbox)
        if hot:  # a candidate check in the hot worker (imported and collected once, forked per check)
            sandbox.run_tests()
            run = sandbox.run_tests([ATTACK, CANARY], warm=True)
            assert sandbox.hot_runs == 1, "the hot worker was not used"
            return run, sandbox
        if warm:  # through the warm fork-server worker that candidate verification uses
            sandbox.run_tests()
            return sandbox.run_tests(warm=True), sandbox
        return sandbox.run_tests(), sandbox

    yield run
    for sandbox in made:
        sandbox.close()
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A real folder outside /tmp (private inside the sandbox anyway), wherever the checkout itself lives."""
    for parent in ("/var/cache", "/var/lib", "/opt"):
        try:
            folder = Path(tempfile.mkdtemp(prefix="selfix-outside-tmp-", dir=parent))
        except OSError:
            continue
        folder.chmod(0o755)  # readable by the sandbox uid, like a checkout would be
        (folder / "pyproject.toml").write_text("[build-system]\n", encoding="utf-8")
        (folder / "pyproject.toml").chmod(0o644)
        yield folder
        shutil.rmtree(folder, ignore_errors=True)
        return
    pytest.skip("no writable folder outside /tmp to prove path hiding on")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on the host's loopback, like a local service (a metadata proxy, a database...)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()
