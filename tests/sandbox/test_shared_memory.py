"""multiprocessing's locks and a process pool work inside the sandbox at every level, as outside: they need
``/dev/shm`` (POSIX semaphores). At ``landlock`` it was not writable and such tests failed with PermissionError
(the sandbox differential: black's multi-file runs); bwrap gives each run a private one."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.engine.models import TestStatus
from selfix_action.errors import SandboxError
from selfix_action.sandbox.isolation import IsolationConfig, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.conftest import write_project
from tests.security.conftest import python_for, traversable

PROJECT = {
    "tests/test_shm.py": """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor


        def test_a_lock():
            with multiprocessing.Lock():
                pass


        def test_a_process_pool():
            with ProcessPoolExecutor(max_workers=2) as pool:
                assert list(pool.map(abs, [-1, -2])) == [1, 2]
        """,
}


@pytest.mark.parametrize("mode", ["landlock", "bwrap", "unshare"])
def test_multiprocessing_inside_the_sandbox(tmp_path: Path, mode: str) -> None:
    try:
        isolation = detect_isolation(IsolationConfig(mode=mode))
    except SandboxError as exc:
        pytest.skip(f"isolation level {mode} is not available on this machine: {exc}")
    traversable(tmp_path)
    repo = write_project(tmp_path / "repo", PROJECT)
    with PytestSandbox(
        repo,
        [python_for(isolation), "-m", "pytest"],
        limits=Limits(wall_seconds=60),
        env_source={"PATH": "/usr/bin:/bin"},
        scratch_parent=tmp_path,
        isolation=isolation,
    ) as sandbox:
        run = sandbox.run_tests(None)
    assert {n: r.status for n, r in run.results.items()} == {
        "tests/test_shm.py::test_a_lock": TestStatus.PASSED,
        "tests/test_shm.py::test_a_process_pool": TestStatus.PASSED,
    }, run.output_tail
