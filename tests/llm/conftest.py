"""Fixtures for the LLM engine tests: scripted model servers, engines built through the factory, and real
pytest sandboxes whose test runs are memoized so many loops over one project stay fast.

The ``live`` marker (declared in pyproject.toml) selects the opt-in smoke test against the real Anthropic API: it
runs only with ``-m live`` and ``ANTHROPIC_API_KEY`` set, and is skipped with a reason otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog, project_digest
from tests.helpers.projects import CALC, EXAMPLES, write_project
from tests.helpers.property_answers import ITEMS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markexpr = " ".join(str(config.getoption("markexpr", "") or "").split())
    selected = re.search(r"(?<!not )\blive\b", markexpr) is not None  # "-m live", not "-m 'not live'"
    has_key = bool(os.environ.get("ANTHROPIC_API_KEY"))
    for item in items:
        if item.get_closest_marker("live") is None:
            continue
        if not selected:
            item.add_marker(pytest.mark.skip(reason="live provider test: opt in with -m live"))
        elif not has_key:
            item.add_marker(pytest.mark.skip(reason="live provider test: ANTHROPIC_API_KEY is not set"))


@pytest.fixture
def project_sandbox(tmp_path: Path) -> Iterator[Callable[..., CachedSandbox]]:
    """``project_sandbox(files={...})`` or ``project_sandbox(example="age_check")``."""
    made: list[PytestSandbox] = []

    def make(*, files: dict[str, str] | None = None, example: str | None = None) -> CachedSandbox:
        repo = tmp_path / f"proj{len(made)}"
        if example is not None:
            shutil.copytree(EXAMPLES / example, repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
        else:
            write_project(repo, files or {})
        sandbox = PytestSandbox(
            repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=60), scratch_parent=tmp_path
        )
        made.append(sandbox)
        return CachedSandbox(sandbox, project_digest(repo))

    yield make
    for sandbox in made:
        sandbox.close()


@pytest.fixture
def trace_log() -> TraceLog:
    return TraceLog()


@pytest.fixture
def calc(project_sandbox: Callable[..., CachedSandbox]) -> CachedSandbox:
    """The CALC project (``a - b`` for ``a + b``) in a memoized sandbox."""
    return project_sandbox(files=CALC)


@pytest.fixture(scope="session")
def hypothesis_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """selfix's cache of Hypothesis for the project's Python, shared by the session's property tests (the first
    that needs it installs it from the package index, as a user's first heal does)."""
    return tmp_path_factory.mktemp("hypothesis-cache")


@pytest.fixture
def items_sandbox(tmp_path: Path, hypothesis_cache: Path) -> Iterator[CachedSandbox]:
    """The ITEMS project (tests/helpers/property_answers.py) in a sandbox that provides Hypothesis from the
    session's cache."""
    repo = write_project(tmp_path / "items", ITEMS)
    sandbox = PytestSandbox(
        repo,
        [sys.executable, "-m", "pytest"],
        limits=Limits(wall_seconds=60),
        scratch_parent=tmp_path,
        hypothesis_cache=hypothesis_cache,
    )
    yield CachedSandbox(sandbox, project_digest(repo))
    sandbox.close()
