"""For the LLM engine's loops over real pytest sandboxes: a sandbox whose test runs are memoized (so many loops
over one project stay fast) and a log of the trace events."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from selfix_action.repair.values import TestRun
from selfix_action.sandbox.pytest_sandbox import PytestSandbox


class CachedSandbox:
    """A real ``PytestSandbox`` whose test runs are memoized by (project content, files patched, request).

    Every result is one real pytest run the first time; later loops over the same project reuse it. The time
    limits of a run (``wall_seconds``, ``time_left``: the heal's clock and the baseline's timings) are not part of
    the request: they differ on every loop, and a run that finished within them gives the same results.
    """

    _LIMITS = ("extra_test_files", "warm", "wall_seconds", "time_left")

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
        settings = tuple(sorted((k, v) for k, v in options.items() if k not in self._LIMITS))
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


def project_digest(root: Path) -> str:
    """A hash of the project's files (names and bytes, caches aside): the memo's key for its content."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class TraceLog:
    """Collects the engine's and the loop's trace events."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, step: str, message: str = "", **data: Any) -> None:
        self.events.append({"step": step, "message": message, **data})

    def steps(self, step: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["step"] == step]
