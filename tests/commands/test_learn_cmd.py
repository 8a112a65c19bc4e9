"""``selfix export dpo|stats``, ``selfix learn``, ``selfix view`` and the memory across two ``selfix fix`` runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.learn.trace_schema import read_trace
from tests.conftest import EXAMPLES
from tests.learn.conftest import TRACES


def test_export_dpo_stats_learn_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefs = tmp_path / "prefs.jsonl"
    assert main(["export", "dpo", str(TRACES), "-o", str(prefs)]) == 0
    assert "preference pair(s)" in capsys.readouterr().out
    rows = [json.loads(line) for line in prefs.read_text().splitlines()]
    assert rows and all({"prompt", "chosen", "rejected", "margin", "provenance"} <= set(r) for r in rows)
    assert main(["export", "stats", str(TRACES), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 10
    model = tmp_path / "rm.json"
    assert main(["learn", str(TRACES), "-o", str(model)]) == 0
    assert "held-out" in capsys.readouterr().out and json.loads(model.read_text())["features"]
    view = tmp_path / "v.html"
    assert main(["view", str(TRACES / "offline-average.trace.jsonl"), "-o", str(view)]) == 0
    assert 'id="timeline"' in view.read_text()


def test_unknown_trace_version_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "trace.jsonl"
    bad.write_text('{"record": "header", "schema_version": 7}\n')
    assert main(["view", str(bad)]) == 2
    assert "schema version 7 is not supported" in capsys.readouterr().err
    assert main(["export", "dpo", str(bad), "-o", str(tmp_path / "p.jsonl")]) == 2
    assert "no readable trace" in capsys.readouterr().err


@pytest.mark.slow
def test_second_run_with_memory_needs_fewer_candidates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = tmp_path / "memory.db"
    candidates = []
    for attempt in ("first", "second"):
        repo = tmp_path / attempt / "average"
        shutil.copytree(EXAMPLES / "average", repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
        out = tmp_path / attempt / "out"
        code = main(["fix", str(repo), "--quiet", "--out", str(out), "--memory", str(memory), "--isolation", "none"])
        assert code == 0, capsys.readouterr()
        report = json.loads((out / "report.json").read_text())
        assert report["patch"]["template"] == "binop_replace"
        candidates.append(report["candidates_tried"])
        trace = read_trace(out / "trace.jsonl")
        assert trace.steps("outcome")[0].model_dump()["healed"] is True
    assert candidates[1] < candidates[0], candidates
    assert candidates[1] == 1
    boosted = [e for e in trace.steps("memory") if e.model_dump().get("boosted")]
    assert boosted and "binop_replace" in boosted[0].model_dump()["boosted"]
