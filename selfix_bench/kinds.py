"""Task files of either kind: a mutant task (``tasks.py``) or a real-bug task (``"kind": "realbug"``,
``realbugs.py``), read as a ``BenchTask`` (``base.py``)."""

from __future__ import annotations

from pathlib import Path

from selfix_action.errors import InputError
from selfix_bench import realbugs, tasks
from selfix_bench.base import BenchTask, load_folder, read_task_data


def load_bench_task(path: Path) -> BenchTask:
    """A mutant task, or a real-bug task."""
    data = read_task_data(path)
    if realbugs.is_realbug_file(data):
        try:
            return realbugs.task_from_data(data, str(path.parent.resolve()))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"bad real-bug task file {path}: {exc}") from exc
    return tasks.task_from_data(data, path)


def load_bench_tasks(directory: Path) -> list[BenchTask]:
    """Every task of a directory (or one file), of either kind; ids must be unique."""
    return load_folder(directory, load_bench_task, lambda task: task.id)
