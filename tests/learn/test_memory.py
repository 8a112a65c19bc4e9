from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.learn.memory import MISLED_WEIGHT, PRIOR, Memory
from selfix_action.repair.fingerprint import signature
from tests.helpers.learning import SIG, run_record

ELSEWHERE = signature("AssertionError", "assert 2 == 2.5", "stats.py:midrange")
OTHER = signature("KeyError", "'x'", "a.py:f")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_smoothed_scores_and_boosts(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", clock=Clock())
    assert memory.boosted_templates([SIG]) == {}
    memory.record(run_record("r1", "binop_replace", ["name_replace", "binop_replace"]))
    scores = memory.template_scores([SIG])
    # one lucky fix: (1 + 2 * 0.1) / (1 + 2) = 0.4, not 1.0; a template that failed once: 0.2 / 3
    assert scores["binop_replace"] == pytest.approx(0.4)
    assert scores["name_replace"] == pytest.approx(0.2 / 3, abs=1e-5)
    assert memory.boosted_templates([SIG]) == {"binop_replace": pytest.approx(0.4)}
    # a similar failure elsewhere (same exception and message shape) gets the boost at similarity 0.7
    assert memory.template_scores([ELSEWHERE])["binop_replace"] == pytest.approx((0.7 + 0.2) / 2.7, abs=1e-5)
    assert memory.template_scores([OTHER]) == {}


def test_exponential_decay_lets_new_evidence_count_more(tmp_path: Path) -> None:
    clock = Clock()
    memory = Memory(tmp_path / "m.db", clock=clock, half_life_days=30)
    memory.record(run_record("old", "binop_replace", ["binop_replace"]))
    clock.now += 30 * 86400  # one half-life later the old success weighs 0.5
    memory.record(run_record("new", "", ["binop_replace"]))
    score = memory.template_scores([SIG])["binop_replace"]
    assert score == pytest.approx((0.5 + 0.2) / (0.5 + 1 + 2), abs=1e-5)
    assert score < PRIOR * 3


def test_prompt_section_lists_similar_fixes(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", clock=Clock())
    memory.record(run_record("r1", "binop_replace", ["binop_replace"]), diff="-a // b\n+a / b\n")
    text = memory.prompt_section([ELSEWHERE])
    assert "similarity 0.70" in text and "fixed by binop_replace" in text and "+a / b" in text
    assert memory.prompt_section([OTHER]) == ""


def test_corrupt_database_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    path.write_bytes(b"this is not a database" * 100)
    warnings: list[str] = []
    memory = Memory(path, warn=warnings.append)
    assert memory.db is not None and len(warnings) == 1 and "set aside" in warnings[0]
    assert list(tmp_path.glob("m.db.corrupt-*"))
    assert memory.record(run_record("r1", "binop_replace", ["binop_replace"]))


def test_unusable_location_disables_memory_without_failing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    warnings: list[str] = []
    memory = Memory(blocker / "sub" / "m.db", warn=warnings.append)
    assert memory.db is None and warnings
    assert memory.record(run_record("r1", "x", ["x"])) is False and memory.template_scores([SIG]) == {}


WRITER = """
import sys
from selfix_action.learn.memory import Memory
from tests.helpers.learning import run_record
memory = Memory(sys.argv[1])
for i in range(40):
    assert memory.record(run_record(f"{sys.argv[2]}-{i}", "binop_replace", ["binop_replace", "name_replace"]))
"""


def test_two_concurrent_writers_both_record(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Memory(path).close()
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], cwd=root, stderr=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM cases").fetchone()[0] == 80
        assert db.execute("SELECT count(*) FROM repairs").fetchone()[0] == 160  # 2 templates a run
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_boost_needs_the_same_place_or_the_same_failure(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", clock=Clock(), min_evidence=0.25)
    memory.record(
        run_record("r1", "binop_replace", ["name_replace", "binop_replace"], file="averages.py", symbol="average")
    )
    # same failure, same function: one fix moves the template from the prior 0.1 to (1 + 0.2) / 3 = 0.4
    assert memory.boosts_for([SIG], "averages.py", "average") == {"binop_replace": pytest.approx(0.4)}
    # another failure in the same function: evidence 0.6
    assert memory.boosts_for([OTHER], "averages.py", "average") == {"binop_replace": pytest.approx(0.8 / 2.6)}
    # the same failure seen at another function: 0.5; another function of the same file: 0.25
    assert memory.boosts_for([SIG], "averages.py", "median")["binop_replace"] == pytest.approx(0.7 / 2.5)
    assert memory.boosts_for([OTHER], "averages.py", "median")["binop_replace"] == pytest.approx(0.45 / 2.25)
    # only a similar failure (same exception and message shape) elsewhere: no evidence, no boost
    assert memory.boosts_for([ELSEWHERE], "stats.py", "midrange") == {}
    assert memory.template_scores([ELSEWHERE])["binop_replace"] > PRIOR  # (still listed for the Detective)
    # a stricter memory: function or fingerprint evidence only
    strict = Memory(tmp_path / "m.db", clock=Clock(), min_evidence=0.5)
    assert strict.boosts_for([OTHER], "averages.py", "median") == {}
    assert strict.boosts_for([OTHER], "averages.py", "average") != {}
    # the default (calibrated): the same failure at the same function only
    default = Memory(tmp_path / "m.db", clock=Clock())
    assert default.boosts_for([SIG], "averages.py", "average") == {"binop_replace": pytest.approx(0.4)}
    assert default.boosts_for([OTHER], "averages.py", "average") == {}
    assert default.boosts_for([SIG], "averages.py", "median") == {}


def test_a_boost_that_did_not_lead_to_the_fix_decays_fast(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", clock=Clock())
    memory.record(run_record("r1", "binop_replace", ["binop_replace"]))
    assert "binop_replace" in memory.boosts_for([SIG], "f", "s")
    # tried without a boost and not the fix: an ordinary failure, the boost stays
    memory.record(run_record("r2", "", ["binop_replace"]))
    assert memory.boosts_for([SIG], "f", "s")["binop_replace"] == pytest.approx(1.2 / 4)
    # boosted and not the fix: it counts MISLED_WEIGHT times, one such miss takes the boost away
    memory.record(run_record("r3", "name_replace", ["binop_replace", "name_replace"], boosted=("binop_replace",)))
    assert memory.repair_scores([SIG], "f", "s")["binop_replace"] == pytest.approx(1.2 / (1 + 1 + MISLED_WEIGHT + 2))
    assert "binop_replace" not in memory.boosts_for([SIG], "f", "s")


def test_boosted_templates_come_back_from_the_trace(tmp_path: Path) -> None:
    from selfix_action.learn.runs import summarize
    from selfix_action.learn.trace_schema import read_trace

    trace = tmp_path / "trace.jsonl"
    lines = [
        {"record": "header", "schema_version": 1, "run_id": "r", "created": "", "repo": "", "engine": "offline"},
        {
            "t": 0,
            "step": "hypotheses",
            "hypotheses": [
                {"id": "H1", "rank": 1, "title": "t", "confidence": 1.0, "file": "f", "symbol": "s", "lines": [1]}
            ],
        },
        {"t": 0, "step": "memory", "message": "", "boosted": {"binop_replace": 0.4}, "hypothesis": "H1"},
        {"t": 0, "step": "memory", "message": "", "similar_fixes": ""},
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert summarize(read_trace(trace)).boosted == {"H1": ["binop_replace"]}
