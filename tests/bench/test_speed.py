from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_bench.speed import main, measure
from selfix_bench.tasks import load_task

TASKS = Path(__file__).parent / "fixtures" / "tasks"


@pytest.mark.slow
def test_fast_and_naive_paths_reach_the_same_verdict_on_every_candidate() -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    lines: list[str] = []
    summary = measure([task], 12, log=lines.append)
    [row] = summary["rows"]
    assert row["candidates"] == 12 and summary["mismatches"] == 0 and summary["mismatches_one_core"] == 0
    assert row["naive_runs"] == 12  # one whole-suite run per candidate
    assert row["passing"] >= 1  # the fix is among the first 12 candidates, so verdicts differ across candidates
    assert row["fast_runs"] >= 12 and summary["fast_per_second"] > 0 and summary["naive_per_second"] > 0
    assert row["fast_startup_seconds"] > 0 and summary["ratio_with_startup"] < summary["ratio"]
    assert "verdict mismatches 0/0" in lines[0]


def test_cli_writes_the_measurements(tmp_path: Path) -> None:
    out = tmp_path / "speed.json"
    code = main([str(TASKS), "--match", "tiny-clamp", "--tasks", "1", "--candidates", "4", "--json", str(out)])
    data = json.loads(out.read_text())
    assert code == 0 and data["tasks"] == 1 and data["candidates"] == 4 and data["limit_factor"] == 10.0
