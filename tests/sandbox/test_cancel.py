"""``sandbox.cancel``: a run started inside a cancellation dies when another thread cancels it, and nothing of
that work starts afterwards."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.sandbox.cancel import CANCELLED, Cancellation, current
from selfix_action.sandbox.process import Limits, run_process, sandbox_env

SLEEPER = "import os, pathlib, time; pathlib.Path('pid').write_text(str(os.getpid())); time.sleep(600)"


def test_cancel_kills_the_running_process_and_refuses_the_next(tmp_path: Path) -> None:
    cancellation = Cancellation()
    outcome: list[BaseException | object] = []

    def work() -> None:
        with cancellation.active():
            try:
                run_process(
                    [sys.executable, "-c", SLEEPER],
                    cwd=tmp_path,
                    env=sandbox_env(os.environ),
                    limits=Limits(wall_seconds=600),
                )
            except SandboxError as exc:
                outcome.append(exc)
            try:
                run_process([sys.executable, "-c", "pass"], cwd=tmp_path, env=sandbox_env(os.environ))
            except SandboxError as exc:
                outcome.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    pid_file = tmp_path / "pid"
    while not (pid_file.exists() and pid_file.read_text()):
        assert worker.is_alive(), outcome
        worker.join(0.05)
    pid = int(pid_file.read_text())
    cancellation.cancel()
    # The sleeper would hold the thread for 600 s: the join returns because the kill ended the run.
    worker.join(120)
    assert not worker.is_alive()
    assert cancellation.finished.is_set()
    assert [str(e) for e in outcome] == [CANCELLED, CANCELLED]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_outside_a_cancellation_there_is_none() -> None:
    assert current() is None
    cancellation = Cancellation()
    with cancellation.active():
        assert current() is cancellation
    assert current() is None and cancellation.finished.is_set()
