"""Shared fixtures: small real projects written to tmp_path and a sandbox over them, and the isolation levels
the sandbox tests run at (tests/security and tests/sandbox). Plain helpers are in tests/helpers/."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.isolation import traversable
from tests.helpers.projects import write_project

_OWN_BASETEMP = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)  # before pytest's own tmp_path plugin reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    """The session's temp dirs under a folder of its own, walkable by other uids (0711), unless --basetemp says
    otherwise. pytest's default root, /tmp/pytest-of-<user>, is taken back to 0700 by every other pytest session
    of the user that starts (a second terminal, a helper's run), and the landlock level, with no mount namespace,
    needs the sandbox uid to walk to the scratch copies by their real paths. xdist's workers get subfolders."""
    if config.option.basetemp or hasattr(config, "workerinput"):
        return
    folder = Path(tempfile.mkdtemp(prefix="selfix-tests-"))
    folder.chmod(0o711)
    config.option.basetemp = str(folder / "run")
    config.stash[_OWN_BASETEMP] = folder


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A passing run leaves no temp dirs behind; a failing one keeps them to look at."""
    folder = session.config.stash.get(_OWN_BASETEMP, None)
    if folder is not None and exitstatus == 0:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def make_sandbox(tmp_path: Path) -> Iterator[Callable[..., PytestSandbox]]:
    made: list[PytestSandbox] = []

    def make(files: dict[str, str], wall_seconds: float = 60.0) -> PytestSandbox:
        repo = write_project(tmp_path / f"proj{len(made)}", files)
        sandbox = PytestSandbox(
            repo,
            [sys.executable, "-m", "pytest"],
            limits=Limits(wall_seconds=wall_seconds),
            scratch_parent=tmp_path,
        )
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()


@pytest.fixture(scope="session", params=["best", "landlock"])
def isolation(request: pytest.FixtureRequest) -> Isolation:
    """Each test that takes it runs twice: at the best level this machine has (bwrap here) and at the
    namespace-free ``landlock`` level the GitHub Docker action falls back to (skipped, with the reason, where
    that level does not work)."""
    # SELFIX_TEST_ISOLATION=unshare|none runs the "best" half of the suite at a weaker level.
    if request.param == "landlock":
        try:
            return detect_isolation(IsolationConfig(mode="landlock"))
        except SandboxError as exc:
            pytest.skip(f"isolation level landlock is not available on this machine: {exc}")
    best = detect_isolation(IsolationConfig(mode=os.environ.get("SELFIX_TEST_ISOLATION", "auto")))
    if best.level is IsolationLevel.LANDLOCK:
        pytest.skip("the best level here is landlock, which the [landlock] half of the suite runs")
    return best


@pytest.fixture
def traversable_tmp_path(tmp_path: Path) -> Path:
    """``tmp_path``, walkable by the sandbox uid (the landlock level reaches the scratch copy by its real path)."""
    return traversable(tmp_path)
