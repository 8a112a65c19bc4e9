"""Jobs for ``selfix serve``'s local pool in tests: module-level (a spawned worker imports them by name) and light
(the worker imports this module alone)."""

from __future__ import annotations

import os

from selfix_action.serve.dispatch import LocalJob


def record_job(job: LocalJob) -> int:
    """Writes what it was given into the project's folder, with the worker's pid; exit 0, or 1 for "fail" errors."""
    (job.path / f"job-{os.getpid()}-{job.fingerprint.rsplit(':', 1)[-1]}.txt").write_text(
        f"{job.engine}\n{job.test_command}\n{job.error}", encoding="utf-8"
    )
    return 1 if "fail" in job.error else 0


def crash_job(job: LocalJob) -> int:
    raise RuntimeError("the heal blew up")
