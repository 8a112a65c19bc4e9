"""What every benchmark task is, whatever its kind: the ``BenchTask`` protocol, and what the kinds share.

Two kinds implement it: the mutant tasks (``tasks.Task``: a bug spliced into a pinned library) and the real-bug
tasks (``realbugs.RealBugTask``: a historical bug rebuilt from git). The worker, the runner, the recall and the
differential benchmarks talk to this protocol only; ``kinds.load_bench_task`` reads a task file of either kind.
This module imports neither kind, so the two never import each other.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from selfix_action.errors import InputError
from selfix_action.repair.values import TestRun, TestStatus

CACHE_DIR = Path.home() / ".cache" / "selfix-bench"
PIP_TIMEOUT = 300


class BenchTask(Protocol):
    """One benchmark task: a buggy tree, the tests that judge a patch, and the developers' (or reference) fix."""

    # Read-only (the kinds are frozen dataclasses): a property each.
    @property
    def id(self) -> str: ...

    @property
    def source(self) -> dict[str, Any]:
        """Where the tree comes from (an sdist, a local folder, a git repository)."""
        ...

    @property
    def f2p(self) -> tuple[str, ...]:
        """The tests that fail on the buggy tree and pass with the fix."""
        ...

    @property
    def p2p(self) -> tuple[str, ...]:
        """The tests that pass on both."""
        ...

    @property
    def bug_report(self) -> str:
        """What the tool is told (failing test names and assertion output only)."""
        ...

    @property
    def base_dir(self) -> str:
        """The folder of the task file."""
        ...

    @property
    def kind(self) -> str:
        """``mutant`` or ``realbug``: the record's kind, the report's split."""
        ...

    @property
    def library(self) -> str:
        """The project the task's tree is of (the runner interleaves tasks by it)."""
        ...

    @property
    def family(self) -> str:
        """The record's ``template``: the mutation kind of a mutant, single-/multi-line of a real bug."""
        ...

    def materialize(self, dest: Path, *, fixed: bool = False, cache: Path = CACHE_DIR) -> Path:
        """The tree the tool sees at ``dest`` (the buggy one; the fixed one when ``fixed``)."""
        ...

    def python(self, cache: Path = CACHE_DIR) -> str:
        """The interpreter that runs the task's tests (a cached venv with its pinned requirements, or ours)."""
        ...

    def test_command(self, python: str) -> tuple[str, ...]:
        """The project's test command the tool gets, run by ``python``."""
        ...

    def reference_fix(self, cache: Path = CACHE_DIR) -> tuple[dict[str, str], dict[str, str]]:
        """The fix as (fixed texts, buggy texts) by repo-relative path: what the oracle applies."""
        ...

    def judge(self, files: Mapping[str, str], python: str, workdir: Path, cache: Path = CACHE_DIR) -> dict[str, Any]:
        """The verdict on the tool's edited files (``resolved`` and the kind's own fields), judged on a fresh tree
        in ``workdir``, never the tool's copy; the tool's edits to test files never count."""
        ...

    def unedited_verdict(self) -> dict[str, Any] | None:
        """The verdict of a heal that edited nothing, when it is known without a run (None: judge it)."""
        ...

    def to_json(self) -> str:
        """The task file's text."""
        ...


def is_under(path: str, roots: Iterable[str]) -> bool:
    """``path`` is one of ``roots`` or inside one of them (repo-relative, ``/``-separated)."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def passed(run: TestRun) -> set[str]:
    return {n for n, r in run.results.items() if r.status is TestStatus.PASSED}


def not_passed(run: TestRun, ids: Iterable[str]) -> list[str]:
    """The tests of ``ids`` that did not pass in ``run`` (failed, errored, skipped or not run at all)."""
    return [n for n in ids if n not in run.results or run.results[n].status is not TestStatus.PASSED]


def venv_python(
    env: Path,
    requirements: Sequence[str],
    site_files: Mapping[str, str] | None = None,
    *,
    interpreter: str = sys.executable,
    cwd: Path | None = None,
    pip_env: Mapping[str, str] | None = None,
) -> str:
    """The interpreter of a cached venv at ``env`` with ``requirements`` installed (built once, marked complete);
    ``site_files``: files written into its site-packages (a ``.pth`` start-up shim). ``interpreter`` makes the
    venv, pip runs in ``cwd`` (a requirement ``-e .`` is that folder) with ``pip_env`` added to its environment."""
    python = env / "bin" / "python"
    if not (env / ".complete").exists():
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([interpreter, "-m", "venv", str(env)], check=True, timeout=PIP_TIMEOUT, capture_output=True)
        proc = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
            timeout=PIP_TIMEOUT * 3,
            capture_output=True,
            text=True,
            check=False,
            cwd=cwd,
            env={**os.environ, **pip_env} if pip_env else None,
        )
        if proc.returncode != 0:
            raise InputError(f"pip could not install the pinned requirements: {proc.stderr.strip()[-400:]}")
        if site_files:
            site = next((env / "lib").glob("python*/site-packages"))
            for name, text in site_files.items():
                (site / name).write_text(text, encoding="utf-8")
        (env / ".complete").write_text("\n".join(requirements) + "\n")
    return str(python)


def coverage_requirement() -> str:
    """selfix's own coverage.py version: its collector plugin runs inside the task's venv."""
    import coverage

    return f"coverage=={coverage.__version__}"


T = TypeVar("T")


def load_folder(directory: Path, load: Callable[[Path], T], ident: Callable[[T], str]) -> list[T]:
    """Every task file of ``directory`` (``*.json``, sorted), or ``directory`` itself when it is one file;
    ids must be unique."""
    if directory.is_file():
        return [load(directory)]
    files = sorted(directory.glob("*.json"))
    if not files:
        raise InputError(f"no task files (*.json) in {directory}")
    tasks = [load(p) for p in files]
    ids = [ident(t) for t in tasks]
    if len(set(ids)) != len(ids):
        raise InputError(f"duplicate task ids in {directory}")
    return tasks


def read_task_data(path: Path) -> dict[str, Any]:
    """A task file's JSON object, or an InputError naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"bad task file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"bad task file {path}: not a JSON object")
    return data


def patch_digest(patch: str) -> str:
    """The key a reviewed verdict is filed under: the patch's text, hashed (a verdict holds for that patch only)."""
    return hashlib.sha256(patch.encode("utf-8")).hexdigest()[:16]
