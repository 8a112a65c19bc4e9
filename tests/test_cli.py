"""``selfix bench`` is the benchmark package's command: handed over whole, or refused clearly without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.cli import BENCH_MODULE, build_parser, main
from selfix_action.errors import ExitCode


def test_bench_is_listed_and_hands_its_arguments_to_the_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    assert "bench" in build_parser().format_help()
    with pytest.raises(SystemExit) as exited:
        main(["bench", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: selfix bench") and "--oracle" in out and "--mirror-dir" in out


def test_bench_recall_stays_a_command_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "recall", "--help"])
    assert capsys.readouterr().out.startswith("usage: selfix bench recall")


def test_bench_without_the_benchmark_package_exits_2_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As in the action's image, which holds the product only: the import of selfix_bench fails."""
    for name in [m for m in sys.modules if m == "selfix_bench" or m.startswith("selfix_bench.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "selfix_bench", None)  # None in sys.modules: the import raises
    assert BENCH_MODULE.startswith("selfix_bench.")
    assert main(["bench", "bench/tasks", "--oracle"]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert "selfix bench needs the benchmark package selfix_bench" in err and "pip install -e ." in err


def test_a_bench_task_folder_that_is_missing_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(tmp_path / "none"), "--oracle"]) == ExitCode.BAD_INPUT
    assert "no such task directory" in capsys.readouterr().err


def test_a_reader_that_goes_away_is_no_traceback(tmp_path: Path) -> None:
    """``selfix junit report.xml | head -1``: the pipe closes early; selfix ends quietly."""
    report = tmp_path / "junit.xml"
    cases = "".join(
        f'<testcase classname="tests.test_a" name="test_{i}"><failure message="x">{"y" * 500}</failure></testcase>'
        for i in range(400)
    )
    report.write_text(f'<testsuite name="s">{cases}</testsuite>')
    read, write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfix_action.cli", "junit", str(report)], stdout=write, stderr=subprocess.PIPE
    )
    os.close(write)
    os.read(read, 10)
    os.close(read)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in err, err
