from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.engine.fingerprint import signature
from selfix_action.learn.memory import PRIOR, Memory
from selfix_action.learn.runs import Attempt, HypothesisOutcome, RunRecord

SIG = signature("AssertionError", "assert 1 == 1.5", "averages.py:average")
ELSEWHERE = signature("AssertionError", "assert 2 == 2.5", "stats.py:midrange")
OTHER = signature("KeyError", "'x'", "a.py:f")


def run(run_id: str, fixed_by: str, tried: list[str], sig=SIG) -> RunRecord:
    attempts = [Attempt(candidate=f"C{i}", template=t, ok=t == fixed_by, stage="x") for i, t in enumerate(tried)]
    h = HypothesisOutcome(
        id="H1",
        rank=1,
        confidence=1,
        title="t",
        file="f",
        symbol="s",
        reached=True,
        exposed=True,
        fixed=bool(fixed_by),
        attempts=attempts,
    )
    return RunRecord(
        run_id=run_id,
        healed=bool(fixed_by),
        patch_template=fixed_by,
        signatures=[sig],
        fingerprint=sig.fingerprint,
        hypotheses=[h],
        candidates=len(tried),
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_smoothed_scores_and_boosts(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", clock=Clock())
    assert memory.boosted_templates([SIG]) == {}
    memory.record(run("r1", "binop_replace", ["name_replace", "binop_replace"]))
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
    memory.record(run("old", "binop_replace", ["binop_replace"]))
    clock.now += 30 * 86400  # one half-life later the old success weighs 0.5
    memory.record(run("new", "", ["binop_replace"]))
    score = memory.template_scores([SIG])["binop_replace"]
    assert score == pytest.approx((0.5 + 0.2) / (0.5 + 1 + 2), abs=1e-5)
    assert score < PRIOR * 3


def test_prompt_section_lists_similar_fixes(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", clock=Clock())
    memory.record(run("r1", "binop_replace", ["binop_replace"]), diff="-a // b\n+a / b\n")
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
    assert memory.record(run("r1", "binop_replace", ["binop_replace"]))


def test_unusable_location_disables_memory_without_failing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    warnings: list[str] = []
    memory = Memory(blocker / "sub" / "m.db", warn=warnings.append)
    assert memory.db is None and warnings
    assert memory.record(run("r1", "x", ["x"])) is False and memory.template_scores([SIG]) == {}


WRITER = """
import sys
from selfix_action.engine.fingerprint import signature
from selfix_action.learn.memory import Memory
from tests.learn.test_memory import run
memory = Memory(sys.argv[1])
for i in range(40):
    assert memory.record(run(f"{sys.argv[2]}-{i}", "binop_replace", ["binop_replace", "name_replace"]))
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
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
