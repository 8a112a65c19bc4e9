from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_bench.generate import Library, generate_from_tree
from selfix_bench.report import render_markdown, render_svg
from selfix_bench.runner import BenchOptions, read_records, run_bench
from selfix_bench.tasks import leak_reasons, load_task

FIXTURES = Path(__file__).parent / "fixtures"
TASKS = FIXTURES / "tasks"


def _records(run_dir: Path) -> dict[str, dict]:
    return {r["id"]: r for r in read_records(run_dir / "results.jsonl")}


@pytest.mark.slow
def test_oracle_resolves_every_task_and_noop_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(TASKS), "--out", str(tmp_path), "--oracle"]) == 0
    oracle = _records(tmp_path / "oracle")
    assert len(oracle) == 2 and all(r["resolved"] for r in oracle.values())
    assert all("+++" in r["patch"] for r in oracle.values())
    assert main(["bench", str(TASKS), "--out", str(tmp_path), "--noop", "--compare", str(tmp_path / "oracle")]) == 0
    noop = _records(tmp_path / "noop")
    assert len(noop) == 2 and not any(r["resolved"] for r in noop.values())
    assert all(r["f2p_failing"] >= 1 for r in noop.values())
    report = (tmp_path / "noop" / "report.md").read_text()
    assert "0/2 = 0.0%" in report and "exact McNemar" in report
    assert (tmp_path / "noop" / "chart.svg").read_text().startswith("<svg")


@pytest.mark.slow
def test_runs_resume_where_they_stopped(tmp_path: Path) -> None:
    logs: list[str] = []
    options = BenchOptions(tasks=TASKS, out=tmp_path, run="r", mode="oracle", workers=1, limit=1)
    run_bench(options, log=logs.append)
    assert len(read_records(tmp_path / "r" / "results.jsonl")) == 1
    with open(tmp_path / "r" / "results.jsonl", "a") as handle:
        handle.write('{"id": "cut sho')  # an interrupted write is ignored and its task run again
    logs.clear()
    run_bench(BenchOptions(tasks=TASKS, out=tmp_path, run="r", mode="oracle", workers=2), log=logs.append)
    assert "1 already recorded, 1 to run" in logs[0]
    assert sorted(_records(tmp_path / "r")) == ["tiny-clamp-name", "tiny-count_above-compare"]


def test_judge_restores_the_original_tests(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    cheat = {"tests/test_mathx.py": "def test_clamp_high():\n    pass\n"}  # the tool "fixes" the test instead
    verdict = task.judge(cheat, sys.executable, tmp_path)
    assert verdict["resolved"] is False and verdict["f2p_failing"] == 1


@pytest.mark.slow
def test_generator_keeps_only_validated_tasks(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    tree = task.materialize(tmp_path / "tree", fixed=True)
    library = Library("tinylib", "0", "tinylib", ("mathx.py",), ("tests",))
    logs: list[str] = []
    tasks = generate_from_tree(
        library, {"kind": "dir", "path": "x"}, tree, sys.executable, max_tasks=3, max_mutants=10, log=logs.append
    )
    assert tasks, logs
    suite = 6
    for made in tasks:
        assert 1 <= len(made.f2p) <= suite * 0.25  # at most 25% of the suite breaks: one test of six here
        assert len(made.f2p) + len(made.p2p) == suite
        assert not leak_reasons(made.bug_report, made.bug, "")
        buggy = (tree / "mathx.py").read_text()
        assert buggy[made.bug.start : made.bug.start + len(made.bug.original)] == made.bug.original
    assert len({t.bug.mutated + str(t.bug.start) for t in tasks}) == len(tasks)  # no duplicates
    assert any("dropped" in line for line in logs)  # mean() mutants break 1 test but most others break more


def test_report_renders_intervals_and_table() -> None:
    records = [
        {"id": "a", "library": "x", "resolved": True, "seconds": 1.0, "test_runs": 3, "candidates": 2},
        {"id": "b", "library": "x", "resolved": False, "seconds": 3.0, "test_runs": 9, "candidates": 7},
    ]
    text = render_markdown(records, "run")
    assert "1/2 = 50.0%" in text and "9.5%-90.5%" in text
    svg = render_svg(records, "run")
    assert svg.count("<rect") == 3 and json.dumps(svg)


@pytest.mark.slow
def test_bench_heals_with_an_llm_engine_keeps_transcripts_and_replays_them(tmp_path: Path) -> None:
    """``selfix bench --engine openai`` takes ``selfix fix``'s flags and goes through the heal pipeline; the
    real OpenAI SDK talks to a scripted server on 127.0.0.1. Each task's trace is its transcript, and
    ``--replay`` heals the same task again from it with no server."""
    from tests.helpers.fake_providers import FakeProvider, openai_tool_call, serve

    task = TASKS / "tiny-clamp-name.json"
    detective = {
        "hypotheses": [
            {
                "title": "clamp returns lo above the range",
                "confidence": 0.9,
                "file": "mathx.py",
                "symbol": "clamp",
                "line_start": 8,
                "line_end": 8,
                "reasoning": "test_clamp_high expects hi",
                "proposed_fix": "return hi",
            }
        ]
    }
    qa = {
        "test_source": "from mathx import clamp\n\n\ndef test_qa():\n    assert clamp(9, 0, 5) == 5\n",
        "expected_failure": "AssertionError",
    }
    patch = {
        "explanation": "return the upper bound",
        "edits": [
            {
                "file": "mathx.py",
                "search": "    if x > hi:\n        return lo",
                "replace": "    if x > hi:\n        return hi",
            }
        ],
    }
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [openai_tool_call("report_hypotheses", detective)],
            "write_reproduction_test": [openai_tool_call("write_reproduction_test", qa)],
            "propose_edits": [openai_tool_call("propose_edits", patch)],
        }
    )
    flags = ["--out", str(tmp_path), "--workers", "1", "--time-limit", "120"]
    with serve(provider) as url:
        code = main(
            ["bench", str(task), *flags, "--engine", "openai", "--api-key", "k", "--base-url", url, "--run", "llm"]
        )
    assert code == 0
    (record,) = _records(tmp_path / "llm").values()
    assert record["resolved"] and record["patch_engine"] == "llm" and record["calls"] == 3
    assert record["input_tokens"] == 300 and record["output_tokens"] == 60
    transcript = tmp_path / "llm" / "transcripts" / "tiny-clamp-name.jsonl"
    steps = [json.loads(line).get("step") for line in transcript.read_text().splitlines()]
    assert steps.count("model_call") == 3
    assert json.loads((tmp_path / "llm" / "meta.json").read_text())["engine"]["structured"] == "auto"

    # The answers alone (no prompt, no project code) are all a replay needs.
    from selfix_bench.transcripts import main as strip

    assert strip([str(tmp_path / "llm" / "transcripts"), str(tmp_path / "answers")]) == 0
    answers = (tmp_path / "answers" / "tiny-clamp-name.jsonl").read_text()
    assert "def clamp" not in answers and "Role: Detective" not in answers and answers.count("model_call") == 3
    replay = ["--engine", "openai", "--replay", str(tmp_path / "answers"), "--run", "replay"]
    assert main(["bench", str(task), *flags, *replay]) == 0
    (again,) = _records(tmp_path / "replay").values()
    assert again["resolved"] and again["patch"] == record["patch"] and again["calls"] == 3


def test_the_ci_report_a_task_gets_names_its_tests_as_pytest_does(tmp_path: Path) -> None:
    """``selfix bench --junit``: the report the heal gets parses back to the task's F2P (failing) and P2P
    (passing) node ids, parameter ids holding ``::`` and classes included."""
    from selfix_action.junit import Outcome, parse_reports
    from selfix_bench.worker import junit_report

    failing = ["tests/test_u.py::test_roundtrip[https://[::1]:80/?a=b]", "test/server_test.py::A::B::test_get"]
    passing = ["tests/test_u.py::test_plain", "tornado/test/web_test.py::Case::test_x[1-2]"]
    report = tmp_path / "ci.xml"
    report.write_text(junit_report(failing, passing))
    cases = parse_reports([report]).cases
    assert [c.nodeid for c in cases if c.outcome is Outcome.FAILED] == failing
    assert [c.nodeid for c in cases if c.outcome is Outcome.PASSED] == passing


def test_a_reviewed_verdict_counts_only_for_the_patch_it_was_given_for() -> None:
    from selfix_bench.base import patch_digest
    from selfix_bench.report import render_markdown

    base = {"kind": "realbug", "resolved": True, "library": "p", "template": "single-line"}
    records = [
        {**base, "id": "a", "correct": True, "patch": "x"},
        {**base, "id": "b", "correct": False, "plausible_wrong": True, "patch": "reordered and-chain"},
        {**base, "id": "c", "correct": False, "plausible_wrong": True, "patch": "another patch"},
    ]
    reviews = {
        "b": {patch_digest("reordered and-chain"): {"verdict": "correct", "argument": "same value on every input"}},
        "c": {patch_digest("a patch nobody read"): {"verdict": "correct", "argument": "for another patch"}},
    }
    report = render_markdown(records, "r", reviews=reviews)
    assert "1 plausible-but-wrong patch(es) read): correct after reading **2/3" in report
    assert "same value on every input" in report and "for another patch" not in report
