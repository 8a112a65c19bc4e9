"""Which tests a heal took as evidence (selfix_bench/gate_check.py reads them from its transcript)."""

from __future__ import annotations

import json
from pathlib import Path

from selfix_bench.gate_check import gated_tests


def test_only_the_tests_that_were_evidence_are_checked(tmp_path: Path) -> None:
    events = [
        {"step": "expose", "exposed": True, "qa_path": "test_qa_h1.py", "qa_test": "def test_a(): assert 0"},
        {"step": "expose", "exposed": False, "qa_path": "test_qa_h2.py", "qa_test": "def test_b(): pass"},
        {"step": "property", "hypothesis": "H1", "used": True, "source": "def test_p(): pass"},
        {"step": "property", "hypothesis": "H1", "used": None, "held": True, "candidate": "H1-P1"},
        {"step": "property", "hypothesis": "H3", "used": False, "source": "def test_q(): pass"},
    ]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(e) for e in events) + "\n", encoding="utf-8")
    assert list(gated_tests(transcript)) == [
        ("qa", "test_qa_h1.py", "def test_a(): assert 0"),
        ("property", "test_property_h1.py", "def test_p(): pass"),
    ]
