"""Shared fixtures: small real projects written to tmp_path and a sandbox over them, and the isolation levels
the sandbox tests run at (tests/security and tests/sandbox). Plain helpers are in tests/helpers/."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.isolation import traversable
from tests.helpers.projects import write_project


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
