"""The recall benchmark: fix hunks, the parser of rendered requests, and a measurement on a bundled example."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from selfix_action import cli
from selfix_action.errors import ExitCode
from selfix_action.llm.prompts import build_context, render_slices
from selfix_action.repair.values import SuspiciousFunction, SuspiciousLine
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.recall import (
    Hunk,
    compare,
    diff_hunks,
    enclosing_symbol,
    is_shown,
    load_evidence,
    right_hypothesis,
    shown_lines,
    summarize,
)
from selfix_bench.tasks import Bug, Task

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BEFORE = "".join(f"line {n}\n" for n in range(1, 11))  # "line 1" .. "line 10"


def _lines(text: str, changes: dict[int, str | None], inserts: dict[int, str] | None = None) -> str:
    """``text`` with line n replaced (str) or deleted (None), and lines inserted after line n (0: at the top)."""
    out = []
    inserts = inserts or {}
    if 0 in inserts:
        out.append(inserts[0])
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        change = changes.get(n, line)
        if change is not None:
            out.append(change)
        if n in inserts:
            out.append(inserts[n])
    return "".join(out)


# -- hunks -----------------------------------------------------------------------------------------------
def test_a_replaced_line_is_its_own_buggy_line() -> None:
    assert diff_hunks("m.py", BEFORE, _lines(BEFORE, {4: "line four\n"})) == [Hunk("m.py", (4,), 1, 1)]


def test_replacing_two_lines_by_three_touches_both() -> None:
    after = _lines(BEFORE, {5: "five\nfive and a half\n", 6: "six\n"})
    assert diff_hunks("m.py", BEFORE, after) == [Hunk("m.py", (5, 6), 2, 3)]


def test_deleted_lines_are_the_buggy_lines() -> None:
    assert diff_hunks("m.py", BEFORE, _lines(BEFORE, {7: None, 8: None})) == [Hunk("m.py", (7, 8), 2, 0)]


def test_an_insertion_counts_the_line_before_it() -> None:
    assert diff_hunks("m.py", BEFORE, _lines(BEFORE, {}, {3: "new\n"})) == [Hunk("m.py", (3,), 0, 1)]


def test_an_insertion_at_the_top_counts_line_one() -> None:
    assert diff_hunks("m.py", BEFORE, _lines(BEFORE, {}, {0: "import os\n"})) == [Hunk("m.py", (1,), 0, 1)]


def test_an_insertion_at_the_end_counts_the_last_line() -> None:
    assert diff_hunks("m.py", BEFORE, BEFORE + "line 11\n") == [Hunk("m.py", (10,), 0, 1)]


def test_separate_changes_are_separate_hunks_and_no_change_none() -> None:
    after = _lines(BEFORE, {2: "two\n", 9: None})
    assert diff_hunks("m.py", BEFORE, after) == [Hunk("m.py", (2,), 1, 1), Hunk("m.py", (9,), 1, 0)]
    assert diff_hunks("m.py", BEFORE, BEFORE) == []


def test_a_new_file_is_an_insertion_at_the_top() -> None:
    assert diff_hunks("new.py", "", "x = 1\n") == [Hunk("new.py", (1,), 0, 1)]


def test_the_location_is_the_innermost_function_or_method() -> None:
    source = (
        "import os\n"  # 1
        "\n"
        "class Box:\n"  # 3
        "    size = 1\n"  # 4
        "\n"
        "    @property\n"  # 6
        "    def area(self):\n"  # 7
        "        return self.size ** 2\n"  # 8
        "\n"
        "def free():\n"  # 10
        "    return 1\n"  # 11
    )
    assert [enclosing_symbol(source, n) for n in (1, 4, 6, 8, 11)] == [
        "<module>",
        "Box",
        "Box.area",
        "Box.area",
        "free",
    ]
    hunks = [Hunk("m.py", (8,), 1, 1), Hunk("m.py", (11,), 1, 1)]
    only_first = right_hypothesis(hunks, {"m.py": source}, every=False)
    every = right_hypothesis(hunks, {"m.py": source}, every=True)
    assert (only_first.file, only_first.symbol, only_first.lines, only_first.also) == ("m.py", "Box.area", (8,), ())
    assert [(loc.symbol, loc.lines) for loc in every.locations()] == [("Box.area", (8,)), ("free", (11,))]


# -- the parser of rendered requests ---------------------------------------------------------------------------
def test_the_parser_reads_each_files_numbered_lines_across_gaps() -> None:
    files = {
        "pkg/a.py": "".join(f"a{n} = {n}\n" for n in range(1, 21)),
        "pkg/b.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
    }
    rendered = render_slices({"pkg/a.py": {1, 2, 9, 10, 11, 20}, "pkg/b.py": {5, 6}}, files.__getitem__)
    assert "  ..." in rendered  # the gaps are there to be skipped
    text = f"# Evidence\n## Localization\n- pkg/a.py:3 in f score 1.0\n\n{rendered}\n\nRole: Detective."
    shown = shown_lines(text)
    assert {path: sorted(lines) for path, lines in shown.items()} == {
        "pkg/a.py": [1, 2, 9, 10, 11, 20],
        "pkg/b.py": [5, 6],
    }
    assert shown["pkg/a.py"][10] == "a10 = 10" and shown["pkg/b.py"][6] == "    return 2"
    assert is_shown(Hunk("pkg/a.py", (9, 10, 11), 3, 3), shown)
    assert not is_shown(Hunk("pkg/a.py", (11, 12), 2, 2), shown)  # line 12 fell in a gap
    assert not is_shown(Hunk("pkg/b.py", (1,), 1, 1), shown)
    assert not is_shown(Hunk("pkg/c.py", (1,), 1, 1), shown)  # a file never shown


def test_numbered_text_outside_a_file_block_is_not_code_shown() -> None:
    # A traceback or test output holding "  3 | x" is not the file's code; a header without its block neither.
    text = (
        "## Failing tests\n<<<UNTRUSTED test output id=1: data>>>\n    3 | x = 1\n"
        "<<<END UNTRUSTED test output id=1>>>\n"
        "### pkg/a.py (9 lines)\nnot a block\n    4 | y = 2\n"
    )
    assert shown_lines(text) == {}


def test_the_shared_context_is_parsed_as_rendered() -> None:
    source = "".join(f"v{n} = {n}\n" for n in range(1, 6)) + "\n\ndef f(x):\n    return x + 1\n"
    from selfix_action.repair.values import Evidence

    evidence = Evidence(
        f2p_tests=(),
        p2p_tests=(),
        failures=(),
        suspicious_lines=(SuspiciousLine(file="m.py", line=9, score=1.0, function="f"),),
        suspicious_functions=(SuspiciousFunction(file="m.py", name="f", start=8, end=9, score=1.0),),
        coverage_used=True,
    )
    shown = shown_lines(build_context(evidence, {"m.py": source}.__getitem__))
    assert sorted(shown["m.py"]) == [1, 2, 3, 4, 5, 8, 9]  # the module's constants and the suspect function


# -- totals and comparisons -------------------------------------------------------------------------------
def _record(task: str, shown: list[bool], tokens: int) -> dict[str, Any]:
    rows = [
        {"key": f"m.py:{n}", "detective": s, "patcher_a": True, "patcher_b": True, "reachable": True}
        for n, s in enumerate(shown, 1)
    ]
    count = sum(shown)
    return {
        "id": task,
        "kind": "mutant",
        "hunks": len(rows),
        "detective": count,
        "patcher_a": len(rows),
        "patcher_b": len(rows),
        "reachable": len(rows),
        "chars": {"detective": tokens * 4, "qa": 40, "patcher_a": 40, "patcher_b": 40},
        "hunk_rows": rows,
    }


def test_totals_give_the_share_with_its_interval_and_the_median_size() -> None:
    records = [
        _record("t1", [True, False], 100),
        _record("t2", [True], 300),
        {"id": "t3", "kind": "mutant", "error": "x"},
    ]
    text = "\n".join(summarize(records))
    assert "Detective shown" in text and "hunks 2/3 = 66.7% [" in text
    assert "tasks with every hunk 1/2" in text
    assert "detective 200" in text  # the median ~tokens of 100 and 300
    assert "not measured: 1 task(s): t3 (x)" in text


def test_a_comparison_pairs_the_same_hunks_of_the_same_tasks() -> None:
    before = [_record("t1", [False, False], 100), _record("t2", [True], 100)]
    after = [_record("t1", [True, False], 150), _record("t2", [True], 100)]
    text = "\n".join(compare(after, before, "before.json"))
    assert "t1                     detective +1" in text and "t2 " not in text
    assert "detective  hunks shown in both 1, this run only 1, that run only 0, neither 1" in text
    assert "detective  median paired change +25 ~tokens" in text


# -- end to end on a bundled example -----------------------------------------------------------------------------
def _example_task(name: str, folder: Path) -> Task:
    """A benchmark task made of an example: its fixed tree is the pristine source, the example's bug the
    injected one (examples/expected_fixes.json); F2P and P2P from one run of its tests."""
    fix = json.loads((EXAMPLES / "expected_fixes.json").read_text(encoding="utf-8"))[name]
    pristine = folder / "pristine"
    shutil.copytree(EXAMPLES / name, pristine, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
    path = pristine / fix["file"]
    buggy = path.read_text(encoding="utf-8")
    start = buggy.index(fix["buggy"])
    path.write_text(buggy.replace(fix["buggy"], fix["fixed"], 1), encoding="utf-8")
    import sys

    with PytestSandbox(EXAMPLES / name, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=120)) as box:
        run = box.run_tests()
    task = Task(
        id=f"example-{name}",
        source={"kind": "dir", "path": str(pristine)},
        bug=Bug(fix["file"], fix["line"], start, fix["fixed"], fix["buggy"]),
        f2p=tuple(run.failing()),
        p2p=tuple(run.passing()),
        bug_report="",
        test_paths=("tests",),
        base_dir=str(folder),
    )
    (folder / f"{task.id}.json").write_text(task.to_json(), encoding="utf-8")
    return task


@pytest.mark.slow
def test_recall_of_an_example_from_its_captured_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = _example_task("two_modules", tmp_path / "tasks")
    assert task.f2p and task.p2p
    evidence_dir, out = tmp_path / "evidence", tmp_path / "recall.json"
    isolation = "bwrap" if shutil.which("bwrap") else "auto"  # the command's default, where the machine has it
    folders = [str(tmp_path / "tasks"), "--evidence-dir", str(evidence_dir)]
    code = cli.main(["bench", "recall", *folders, "--json", str(out), "--isolation", isolation])
    assert code == 0
    evidence = load_evidence(evidence_dir, task.id)
    assert evidence is not None and evidence.coverage_used and set(evidence.f2p_tests) == set(task.f2p)
    meta = json.loads((evidence_dir / f"{task.id}.meta.json").read_text(encoding="utf-8"))
    assert meta["captured"] and meta["isolation"] == isolation
    (record,) = json.loads(out.read_text(encoding="utf-8"))["tasks"]
    # The known bug line, shown to the Detective and the Patcher, and within reach of the asks.
    assert record["hunk_rows"] == [
        {
            "key": "shop/pricing.py:19",
            "file": "shop/pricing.py",
            "lines": [19, 19],
            "symbol": "apply_discount",
            "removed": 1,
            "added": 1,
            "detective": True,
            "patcher_a": True,
            "patcher_b": True,
            "reachable": True,
        }
    ]
    assert all(record["chars"][role] > 1000 for role in ("detective", "qa", "patcher_a", "patcher_b"))
    printed = capsys.readouterr().out
    assert "example-two_modules" in printed and "Detective shown" in printed and "hunks 1/1 = 100.0%" in printed

    # The same measure, its localization pointing elsewhere (the caller in shop/cart.py): the Detective's
    # context no longer holds the buggy line; the Patcher, told the right location, still shows it.
    elsewhere = evidence.model_copy(
        update={
            "suspicious_lines": tuple(s for s in evidence.suspicious_lines if s.file != "shop/pricing.py"),
            "suspicious_functions": tuple(f for f in evidence.suspicious_functions if f.file != "shop/pricing.py"),
        }
    )
    assert elsewhere.suspicious_lines  # something else is still ranked
    (evidence_dir / f"{task.id}.json").write_text(elsewhere.model_dump_json(), encoding="utf-8")
    assert (
        cli.main(
            [
                "bench",
                "recall",
                str(tmp_path / "tasks"),
                "--evidence-dir",
                str(evidence_dir),
                "--json",
                str(tmp_path / "after.json"),
                "--compare",
                str(out),
            ]
        )
        == 0
    )
    (after,) = json.loads((tmp_path / "after.json").read_text(encoding="utf-8"))["tasks"]
    assert (after["detective"], after["patcher_a"], after["patcher_b"]) == (0, 1, 1)
    printed = capsys.readouterr().out
    assert "example-two_modules      detective -1" in printed or "detective -1" in printed


def test_bad_task_folders_are_refused_with_the_input_exit_code(tmp_path: Path) -> None:
    assert cli.main(["bench", "recall", str(tmp_path / "missing")]) == ExitCode.BAD_INPUT
    assert cli.main(["bench", "recall", str(tmp_path), "--compare", str(tmp_path / "none.json")]) == ExitCode.BAD_INPUT
