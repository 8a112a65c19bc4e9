"""Fixtures for the LLM engine tests: scripted model servers, engines built through the factory, and real
pytest sandboxes whose test runs are memoized so many loops over one project stay fast.

The ``live`` marker selects the opt-in smoke test against the real Anthropic API: it runs only with
``-m live`` and ``ANTHROPIC_API_KEY`` set, and is skipped with a reason otherwise.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest

from selfix_action.repair.values import TestRun
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.conftest import EXAMPLES, write_project


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live: calls a real model provider (needs -m live and ANTHROPIC_API_KEY)")


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


class CachedSandbox:
    """A real ``PytestSandbox`` whose test runs are memoized by (project content, files patched, request).

    Every result is one real pytest run the first time; later loops over the same project reuse it.
    """

    _cache: ClassVar[dict[tuple[Any, ...], TestRun]] = {}

    def __init__(self, inner: PytestSandbox, project_key: str) -> None:
        self.inner = inner
        self.project_key = project_key
        self._patches: list[frozenset[tuple[str, str]]] = []
        self.real_runs = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read_file(self, path: str) -> str:
        return self.inner.read_file(path)

    def source_files(self) -> list[str]:
        return self.inner.source_files()

    @contextmanager
    def patched(self, files: Mapping[str, str]) -> Iterator[None]:
        self._patches.append(frozenset(files.items()))
        try:
            with self.inner.patched(files):
                yield
        finally:
            self._patches.pop()

    def run_tests(self, nodeids: Sequence[str] | None = None, **options: Any) -> TestRun:
        extra = options.get("extra_test_files") or {}
        settings = tuple(sorted((k, v) for k, v in options.items() if k not in ("extra_test_files", "warm")))
        key = (
            self.project_key,
            tuple(nodeids) if nodeids is not None else None,
            settings,
            frozenset(extra.items()),
            tuple(self._patches),
        )
        if key not in self._cache:
            self.real_runs += 1
            self._cache[key] = self.inner.run_tests(nodeids, **options)
        return self._cache[key]


def _digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


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
        return CachedSandbox(sandbox, _digest(repo))

    yield make
    for sandbox in made:
        sandbox.close()


class TraceLog:
    """Collects the engine's and the loop's trace events."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, step: str, message: str = "", **data: Any) -> None:
        self.events.append({"step": step, "message": message, **data})

    def steps(self, step: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["step"] == step]


@pytest.fixture
def trace_log() -> TraceLog:
    return TraceLog()
