"""multiprocessing's locks and a process pool work inside the sandbox at every level, as outside: they need
``/dev/shm`` (POSIX semaphores). At ``landlock`` it was not writable and such tests failed with PermissionError
(the sandbox differential: black's multi-file runs); bwrap gives each run a private one."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.repair.values import TestStatus
from tests.helpers.isolation import run_project_at

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
    run = run_project_at(mode, tmp_path, PROJECT)
    assert {n: r.status for n, r in run.results.items()} == {
        "tests/test_shm.py::test_a_lock": TestStatus.PASSED,
        "tests/test_shm.py::test_a_process_pool": TestStatus.PASSED,
    }, run.output_tail
