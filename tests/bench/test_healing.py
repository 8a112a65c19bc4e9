"""The benchmark heals through the product's pipeline (selfix_bench/healing.py), and so does each measurement
script that heals: bench_examples, bench_verdicts, collector_localization, prompt_size."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from selfix_action.offline.engine import OfflineEngine
from selfix_action.repair.loop import LoopConfig
from selfix_action.repair.report import StopReason
from selfix_bench import bench_examples, bench_verdicts, collector_localization, prompt_size
from selfix_bench.healing import EXAMPLES, heal_copy
from selfix_bench.tasks import load_task

TASKS = Path(__file__).parent / "fixtures" / "tasks"
EXAMPLE = EXAMPLES / "range_sum"

pytestmark = pytest.mark.slow


def test_heal_copy_goes_through_the_pipeline_and_leaves_the_source_alone() -> None:
    before = (EXAMPLE / "range_sum.py").read_text(encoding="utf-8")
    seconds, outcome = heal_copy(EXAMPLE, LoopConfig(), engine=OfflineEngine())
    assert outcome.healed and seconds > 0
    report = outcome.report
    # Set only by heal_in_sandbox: the isolation every test run had, and how the runs ran.
    assert report.isolation["level"] == "none" and sum(report.process_runs.values()) == report.test_runs
    assert outcome.paths is not None and outcome.paths.report_json.name == "report.json"
    assert "range(1, n + 1)" in report.patch.diff  # type: ignore[union-attr]
    assert (EXAMPLE / "range_sum.py").read_text(encoding="utf-8") == before


# "average": 7 candidates to its fix (range_sum takes 31), each one a whole cold suite run on the naive path.
def test_bench_examples_heals_on_both_paths(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_examples.main(["average"]) == 0
    out = capsys.readouterr().out
    assert "healed: 1/1" in out and "same patch on both paths: 1/1" in out


def test_bench_verdicts_compares_first_passing_with_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_verdicts.main(["average"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("average") and "all healed: True" in out


@pytest.mark.parametrize(("collector", "measured"), [("always", "sys."), ("never", "coverage.py")])
def test_collector_localization_heals_with_the_line_collector_it_names(collector: str, measured: str) -> None:
    """The product's pipeline takes the line collector (HealRequest.line_collector): forced, it measures the
    lines beside this environment's coverage.py; "never", coverage.py does."""
    task = load_task(TASKS / "tiny-clamp-name.json")
    row = collector_localization.heal_once(task, sys.executable, collector, time_limit=120, max_candidates=200)
    assert row["resolved"] and row["stop_reason"] == StopReason.HEALED.value
    assert row["coverage_used"] and row["collector"].startswith(measured), row


def test_collector_localization_reads_the_collector_from_the_note() -> None:
    assert collector_localization.measured_by("per-test coverage, measured by sys.monitoring") == "sys.monitoring"
    assert collector_localization.measured_by("failing tracebacks only") == ""


def test_prompt_size_measures_each_role_against_whole_files() -> None:
    fixes = json.loads((EXAMPLES / "expected_fixes.json").read_text(encoding="utf-8"))
    sizes = prompt_size.measure(EXAMPLE, fixes["range_sum"], pad=40)
    assert set(sizes) == {"detective", "qa", "patcher"}
    for ours, baseline in sizes.values():
        assert 0 < ours < baseline  # slices of 40 padded helpers are smaller than the whole files
