"""What both sandboxes (pytest's and Node's) do with their scratch copy of the project: paths that stay inside
it, reading its files, listing its editable source, and the limits report every run had."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from selfix_action.errors import SandboxError
from selfix_action.repair.paths import IGNORED_DIR_NAMES, QA_TEST_DIR
from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.process import Limits, MemoryCap


def inside(root: Path, rel: str) -> Path:
    """``rel`` in the copy at ``root``; SandboxError when it would lead out of it (``..``, a link)."""
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        raise SandboxError(f"path escapes the scratch copy: {rel}")
    return path


def read_text(root: Path, rel: str) -> str:
    with open(inside(root, rel), encoding="utf-8", newline="") as handle:
        return handle.read()


def write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def source_files(root: Path, is_source: Callable[[str], bool]) -> list[str]:
    """The copy's files ``is_source`` accepts (repository-relative), skipping environments, caches and the QA
    folder, in a stable order."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIR_NAMES and d != QA_TEST_DIR)
        for name in sorted(filenames):
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if is_source(rel):
                found.append(rel)
    return found


def limits_report(
    limits: Limits, memory: MemoryCap, isolation: Isolation | None, parallel_checks: int
) -> dict[str, object]:
    """The resource limits every test run had, for the report (beside ``Isolation.report()``)."""
    enforced = isolation is not None and isolation.nproc_enforced
    return {
        "wall_seconds": limits.wall_seconds,
        "cpu_seconds": limits.cpu_seconds,
        **memory.report(),
        "max_processes": limits.max_processes if enforced else None,
        "process_limit": (
            f"{limits.max_processes} processes of the sandbox uid at once (RLIMIT_NPROC)"
            if enforced
            else "not enforced at this isolation level"
        ),
        "file_size_bytes": limits.file_size_bytes,
        "open_files": limits.open_files,
        "max_output_bytes": limits.max_output_bytes,
        "parallel_checks": parallel_checks,
    }
