"""Limits that hold: the memory cap derived from the machine, and a suite that never finishes is bad input.

The fork bomb, the leftover sleepers and the derived cap against a real memory bomb run in the real sandbox at
every isolation level: ``tests/security/test_resources.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.sandbox.process import MIN_MEMORY_BYTES, GiB, Limits, memory_cap
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import copy_example, write_project

MEMINFO = "MemTotal:       {total} kB\nMemFree:         1000 kB\nMemAvailable:   {available} kB\n"


def _machine(tmp_path: Path, *, total_gib: int = 8, available_gib: float = 6, cgroup: str | None = None) -> dict:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO.format(total=total_gib * 1024**2, available=int(available_gib * 1024**2)))
    root = tmp_path / "cgroup"
    (root / "ci" / "job").mkdir(parents=True)
    proc_cgroup = tmp_path / "self-cgroup"
    proc_cgroup.write_text("0::/ci/job\n")
    if cgroup is not None:
        (root / "ci" / "memory.max").write_text(cgroup + "\n")  # set on an ancestor of selfix's own cgroup
        (root / "ci" / "job" / "memory.max").write_text("max\n")
    return {"meminfo": meminfo, "cgroup_root": root, "proc_cgroup": proc_cgroup}


def test_the_cap_is_the_machine_share_per_parallel_check(tmp_path: Path) -> None:
    # A 7 GB runner with 6 GiB available and two checks side by side: 2 GiB each, not the 4 GiB ceiling.
    cap = memory_cap(4 * GiB, 2, **_machine(tmp_path, available_gib=6))
    assert cap.bytes == 2 * GiB
    assert cap.usable == 6 * GiB and cap.source == "MemAvailable"
    report = cap.report()
    assert report["memory_bytes"] == 2 * GiB
    assert "MemAvailable 6.00 GiB / (2 parallel check(s) + 1)" in report["memory"]


def test_the_ceiling_holds_on_a_big_machine(tmp_path: Path) -> None:
    cap = memory_cap(4 * GiB, 1, **_machine(tmp_path, total_gib=64, available_gib=60))
    assert cap.bytes == 4 * GiB
    assert "the ceiling" in cap.report()["memory"]


def test_a_cgroup_limit_below_the_machine_wins(tmp_path: Path) -> None:
    cap = memory_cap(4 * GiB, 1, **_machine(tmp_path, available_gib=60, cgroup=str(3 * GiB)))
    assert cap.usable == 3 * GiB and cap.source == "cgroup memory limit"
    assert cap.bytes == 3 * GiB // 2


def test_cgroup_v1_limit_and_no_limit(tmp_path: Path) -> None:
    machine = _machine(tmp_path, available_gib=60)
    v1 = machine["cgroup_root"] / "memory"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    assert memory_cap(4 * GiB, 1, **machine).bytes == 4 * GiB
    (v1 / "memory.limit_in_bytes").write_text(f"{2 * GiB}\n")
    assert memory_cap(4 * GiB, 1, **machine).bytes == GiB


def test_available_falls_back_to_total_and_never_below_the_floor(tmp_path: Path) -> None:
    machine = _machine(tmp_path)
    machine["meminfo"].write_text(f"MemTotal: {2 * 1024**2} kB\n")
    cap = memory_cap(4 * GiB, 15, **machine)
    assert cap.source == "MemTotal" and cap.usable == 2 * GiB
    assert cap.bytes == MIN_MEMORY_BYTES  # 2 GiB / 16 would be 128 MiB: pytest could not even start
    assert "raised to the floor" in cap.report()["memory"]


def test_unknown_memory_keeps_the_ceiling_and_none_stays_none(tmp_path: Path) -> None:
    missing = {"meminfo": tmp_path / "nope", "cgroup_root": tmp_path / "nope", "proc_cgroup": tmp_path / "nope"}
    assert memory_cap(4 * GiB, 2, **missing).bytes == 4 * GiB
    assert memory_cap(None, 2, **_machine(tmp_path)).bytes is None


def test_the_sandbox_runs_and_reports_the_derived_cap(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "p", {"tests/test_m.py": "def test_x():\n    pass\n"})
    expected = memory_cap(4 * GiB, 3)
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], scratch_parent=tmp_path, parallel_checks=3) as box:
        assert box.limits.memory_bytes == expected.bytes
        report = box.limits_report()
    assert report["memory_bytes"] == expected.bytes
    assert report["parallel_checks"] == 3
    # MemAvailable moves between the two reads (other processes run): the same source, about the same figure.
    assert expected.usable is not None
    assert report["memory_source"] == expected.source
    assert abs(report["memory_usable_bytes"] - expected.usable) <= expected.usable // 20
    assert report["wall_seconds"] == Limits().wall_seconds


HANGS = {
    "sleep": "import time\ntime.sleep(10**6)\n",
    "spin": "while True:\n    pass\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(HANGS))
def test_a_suite_that_hangs_at_collection_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """An import that sleeps or spins forever: the baseline is killed at the wall limit with no result. That is
    exit 2 with the reason, never exit 3 "no failing tests" (a green suite)."""
    files = {
        "m.py": "X = 1\n",
        "tests/test_a.py": "def test_a():\n    assert 1 == 2\n",
        "tests/test_hang.py": HANGS[how] + "\n\ndef test_b():\n    pass\n",
    }
    repo = write_project(tmp_path / "p", files)
    code = main(["fix", str(repo), "--quiet", "--test-timeout", "5", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "did not finish within 5 s" in err
    assert "no failing test" not in err.lower()


HANGING_TEST = "\n\ndef test_waits_forever():\n    import time\n\n    time.sleep(10**6)\n"


@pytest.mark.slow
def test_a_hanging_test_is_reported_and_the_real_failures_are_healed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test that sleeps forever is killed at the test-run limit, reported as hung, left out of every later
    run, and never a test to heal: the real bug beside it is healed (before, it joined the failing tests and
    the right fix was rejected as "did not run (timed out)")."""
    repo = copy_example("range_sum", tmp_path)
    test_file = repo / "tests" / "test_range_sum.py"
    test_file.write_text(test_file.read_text(encoding="utf-8") + HANGING_TEST, encoding="utf-8")
    out = tmp_path / "out"
    code = main(["fix", str(repo), "--quiet", "--test-timeout", "5", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    hung = "tests/test_range_sum.py::test_waits_forever"
    assert report["hung_tests"] == [hung]
    assert hung not in report["f2p_tests"] and hung not in report["p2p_tests"]
    assert "range(1, n + 1)" in (out / "patch.diff").read_text(encoding="utf-8")
    assert "Hung on the unpatched code" in (out / "report.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_only_hanging_tests_failing_is_exit_2_not_nothing_to_heal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"m.py": "X = 1\n", "tests/test_a.py": "def test_a():\n    pass\n" + HANGING_TEST}
    repo = write_project(tmp_path / "p", files)
    out = tmp_path / "out"
    code = main(["fix", str(repo), "--quiet", "--test-timeout", "5", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["stop_reason"] == "only_hung_tests"
    assert report["hung_tests"] == ["tests/test_a.py::test_waits_forever"]


@pytest.mark.slow
def test_the_time_limit_bounds_the_first_suite_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--time-limit` is the whole run's limit: a first run of the suite that would last until the test-run limit
    (60 s here) is cut at the time limit, and a suite that did not finish in it is exit 2 with the reason."""
    repo = copy_example("range_sum", tmp_path)
    test_file = repo / "tests" / "test_range_sum.py"
    test_file.write_text(test_file.read_text(encoding="utf-8") + HANGING_TEST, encoding="utf-8")
    code = main(
        ["fix", str(repo), "--quiet", "--test-timeout", "60", "--time-limit", "6", "--out", str(tmp_path / "out")]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert "did not finish within the time limit (6 s" in err
