"""``export dpo`` on traces of the bundled examples (offline runs and a scripted-model run): TRL's columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.learn.dpo import DPO_COLUMNS, corpus_stats, dpo_rows, load_runs, write_jsonl
from tests.helpers.learning import TRACES

PROVENANCE = {
    "run_id",
    "trace",
    "repo",
    "engine",
    "fingerprint",
    "chosen_id",
    "rejected_id",
    "chosen_reward",
    "rejected_reward",
}


def read_back(path: Path) -> list[dict]:
    """The column contract DPOTrainer (standard format) reads: non-empty string prompt/chosen/rejected."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        for column in DPO_COLUMNS:
            assert isinstance(row[column], str) and row[column].strip(), column
        assert row["chosen"] != row["rejected"]
        assert isinstance(row["margin"], float) and set(row["provenance"]) == PROVENANCE
    return rows


def test_pairs_from_offline_and_scripted_runs(tmp_path: Path) -> None:
    warnings: list[str] = []
    runs = load_runs([TRACES], warnings)
    assert not warnings and len(runs) == 10
    out = tmp_path / "prefs.jsonl"
    count = write_jsonl(dpo_rows(runs, 0.2), out)
    rows = read_back(out)
    assert count == len(rows) > 0
    assert all(r["margin"] > 0.2 for r in rows)
    kinds = {(r["kind"], r["provenance"]["engine"]) for r in rows}
    assert ("patch", "offline") in kinds and ("hypothesis", "anthropic:claude-sonnet-4-6") in kinds
    scripted = [r for r in rows if r["kind"] == "hypothesis" and r["provenance"]["engine"] != "offline"]
    # the Detective prompt recorded in the trace is the prompt; the verified hypothesis beats the unexposed one
    assert all("[system]" in r["prompt"] for r in scripted)
    assert any("is_adult uses >" in r["chosen"] and "years_until_adult" in r["rejected"] for r in scripted)
    keys = [(r["prompt"], r["chosen"], r["rejected"]) for r in rows]
    assert len(keys) == len(set(keys))


def test_threshold_filters_pairs() -> None:
    runs = load_runs([TRACES], [])
    assert len(dpo_rows(runs, 1.5)) < len(dpo_rows(runs, 0.2))
    assert all(r["margin"] > 1.2 for r in dpo_rows(runs, 1.2))


def test_output_is_deterministic_and_order_independent(tmp_path: Path) -> None:
    files = sorted(TRACES.glob("*.jsonl"))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(dpo_rows(load_runs(files, [])), a)
    write_jsonl(dpo_rows(load_runs([*reversed(files), files[0]], [])), b)  # duplicates collapse too
    assert a.read_bytes() == b.read_bytes()


def test_datasets_loads_the_pairs_when_installed(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is optional; the column contract is tested above")
    out = tmp_path / "prefs.jsonl"
    write_jsonl(dpo_rows(load_runs([TRACES], [])), out)
    data = datasets.load_dataset("json", data_files=str(out), split="train")
    assert set(DPO_COLUMNS) <= set(data.column_names)


def test_stats() -> None:
    stats = corpus_stats(load_runs([TRACES], []))
    assert stats["runs"] == 10 and stats["healed"] == 10
    assert stats["hypotheses"]["fixed"] == 10 and stats["fix_templates"]["binop_replace"] >= 1
    assert stats["tokens"] > 0 and stats["cost_usd"] > 0
