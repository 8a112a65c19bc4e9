"""The calibration set (``bench/calibration/tasks``) is fitted on, the benchmark (``bench/realbugs/tasks``) is
measured on: no bug may be in both, and none may come from the projects kept aside for an independent check.

A bug is the same bug whatever its file is called, so the sets are compared by BugsInPy id, by buggy commit and
by (repository, fixed commit), not by file name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selfix_bench.kinds import load_bench_tasks
from selfix_bench.realbugs import EXCLUDED_PROJECTS, RealBugTask, is_realbug_file

BENCH = Path(__file__).resolve().parents[2] / "bench"
CALIBRATION = BENCH / "calibration" / "tasks"
BENCHMARK = BENCH / "realbugs" / "tasks"
CALIBRATION_LOG = BENCH / "calibration" / "build-log.jsonl"


def _task_files(folder: Path) -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def _bug_keys(task: dict[str, Any]) -> set[tuple[str, str]]:
    """Every name the bug goes by: its BugsInPy id, its buggy commit, its fixed commit in its repository."""
    source = task["source"]
    return {
        ("bugsinpy", task["meta"]["bugsinpy"]),
        ("buggy commit", source["buggy_commit"]),
        ("fixed commit", f"{source['url']}@{source['fixed_commit']}"),
    }


def shared_bugs(calibration: dict[str, dict[str, Any]], benchmark: dict[str, dict[str, Any]]) -> set[tuple[str, str]]:
    seen = set().union(*(_bug_keys(task) for task in benchmark.values()))
    return set().union(*(_bug_keys(task) & seen for task in calibration.values()))


def test_calibration_and_benchmark_share_no_bug() -> None:
    calibration, benchmark = _task_files(CALIBRATION), _task_files(BENCHMARK)
    assert calibration and benchmark
    assert shared_bugs(calibration, benchmark) == set()


def test_a_benchmark_task_copied_into_calibration_is_caught() -> None:
    """The check above looks at the bugs, not the file names: a benchmark task under another name is caught."""
    calibration, benchmark = _task_files(CALIBRATION), _task_files(BENCHMARK)
    name, copied = next(iter(benchmark.items()))
    renamed = {**copied, "id": copied["id"] + "-copy"}
    assert _bug_keys(copied) <= shared_bugs({**calibration, "renamed-" + name: renamed}, benchmark)


@pytest.mark.parametrize("name", sorted(_task_files(CALIBRATION)))
def test_calibration_task_is_a_validated_bug_of_an_allowed_project(name: str) -> None:
    task = _task_files(CALIBRATION)[name]
    assert is_realbug_file(task)
    assert task["project"] not in EXCLUDED_PROJECTS
    assert task["meta"]["bugsinpy"].split("/")[0] == task["project"]
    assert name == f"{task['id']}.json" == f"{task['meta']['bugsinpy'].replace('/', '-')}.json"
    assert task["f2p"], "kept only with a test that fails on the buggy commit and passes with the fix"
    assert set(task["f2p"]).isdisjoint(task["p2p"])


def test_every_calibration_task_was_kept_by_the_logged_build() -> None:
    logged = [json.loads(line) for line in CALIBRATION_LOG.read_text(encoding="utf-8").splitlines() if line]
    kept = {entry["id"] for entry in logged if entry["kept"]}
    assert kept == {task["id"] for task in _task_files(CALIBRATION).values()}
    assert not {entry["id"].split("-")[0] for entry in logged} & EXCLUDED_PROJECTS


def test_calibration_tasks_load_as_benchmark_tasks() -> None:
    tasks = load_bench_tasks(CALIBRATION)
    assert all(isinstance(task, RealBugTask) for task in tasks)
    assert len(tasks) == len(_task_files(CALIBRATION))
