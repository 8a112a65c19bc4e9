from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from selfix_action.errors import InputError
from selfix_action.repair.config import LoopConfig
from selfix_action.repair.values import CandidateCheck, TestStatus
from selfix_action.repair.verify import Verifier
from selfix_action.sandbox.hotswap import skeleton
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.tasks import load_task

TASKS = Path(__file__).parents[1] / "bench" / "fixtures" / "tasks"
F2P = "tests/test_mathx.py::test_clamp_high"


def test_skeleton_ignores_function_bodies_only() -> None:
    base = "X = 1\n\ndef f(a, b=2):\n    return a + b\n"
    assert skeleton(base) == skeleton(base.replace("a + b", "a - b"))
    assert skeleton(base) != skeleton(base.replace("X = 1", "X = 2"))
    assert skeleton(base) != skeleton(base.replace("b=2", "b=3"))


@pytest.mark.slow
def test_hot_checks_reach_the_cold_verdicts(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    repo = task.materialize(tmp_path / "repo")
    buggy = (repo / "mathx.py").read_text()
    fixed = buggy.replace("        return lo\n    return x", "        return hi\n    return x")
    wrong = buggy.replace("if x > hi:", "if x >= hi:")
    module_level = fixed + "\nLIMIT = 3\n"
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=30)) as box:
        verdicts = {}
        for name, text in {"buggy": buggy, "fixed": fixed, "wrong": wrong, "module": module_level}.items():
            with box.patched({"mathx.py": text}):
                hot = box.run_tests([F2P], stop_first=True, warm=True)
                cold = box.run_tests([F2P], stop_first=True)
            verdicts[name] = (hot.results[F2P].status, cold.results[F2P].status)
        assert box.hot_runs == 3  # the module-level edit went to the ordinary warm worker
    assert verdicts["buggy"] == (TestStatus.FAILED, TestStatus.FAILED)
    assert verdicts["fixed"] == (TestStatus.PASSED, TestStatus.PASSED)
    assert verdicts["wrong"] == (TestStatus.FAILED, TestStatus.FAILED)
    assert verdicts["module"] == (TestStatus.PASSED, TestStatus.PASSED)


@pytest.mark.slow
def test_adaptive_limit_cuts_a_runaway_candidate_near_it_not_at_the_global_limit(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    repo = task.materialize(tmp_path / "repo")
    buggy = (repo / "mathx.py").read_text()
    fixed = buggy.replace("        return lo\n    return x", "        return hi\n    return x")
    runaway = buggy.replace("if x > hi:", "while True:\n        pass\n    if x > hi:")
    assert skeleton(runaway) == skeleton(buggy)  # a body-only edit: it goes to the hot worker
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=60)) as box:
        with box.patched({"mathx.py": runaway}):
            started = time.monotonic()
            run = box.run_tests([F2P], stop_first=True, warm=True, wall_seconds=2.0)
            elapsed = time.monotonic() - started
        with box.patched({"mathx.py": fixed}):
            ok = box.run_tests([F2P], stop_first=True, warm=True, wall_seconds=2.0)
        assert box.hot_runs == 2
    assert elapsed < 30  # cut near the 2 s adaptive limit, not at the sandbox's 60 s
    # Cut by the wall limit or by the CPU limit derived from it (SIGXCPU), whichever fires first: both read
    # as a run cut by its limit.
    assert run.timed_out and F2P not in run.passing()
    assert ok.results[F2P].status is TestStatus.PASSED  # a normal candidate is unaffected


class _NoRuns:
    """A sandbox that is never asked to run anything: the limit is arithmetic on the baseline."""

    def source_files(self) -> list[str]:
        return []


def test_adaptive_limit_is_a_multiple_of_the_baseline_with_a_floor() -> None:
    verifier = Verifier(_NoRuns(), LoopConfig())  # type: ignore[arg-type]
    assert verifier.candidate_wall(["a"]) is None  # no baseline measured: the sandbox's limits apply
    verifier.baseline_seconds = {"a": 0.01, "b": 0.5, "c": 0.3}
    assert verifier.candidate_wall(["a"]) == 1.0  # the floor
    assert verifier.candidate_wall(["b", "c"]) == 8.0  # 10 x (0.5 + 0.3)
    assert verifier.candidate_wall(["a", "selfix_qa/test_x.py"]) is None  # a test without a baseline time
    off = Verifier(_NoRuns(), LoopConfig(candidate_limit_factor=0), baseline_seconds=verifier.baseline_seconds)  # type: ignore[arg-type]
    assert off.candidate_wall(["b"]) is None


def test_the_hot_worker_imports_the_unpatched_project_even_when_first_used_under_a_patch(tmp_path: Path) -> None:
    # TABLE is computed at import time from base(): a worker that imported the first candidate would keep the
    # candidate's TABLE for every later check, and judge the unpatched code wrongly.
    module = "def base():\n    return 1\n\n\nTABLE = [base()]\n\n\ndef value():\n    return TABLE[0] + base()\n"
    test = "from mod import value\n\n\ndef test_value():\n    assert value() == 2\n"
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "mod.py").write_text(module)
    (repo / "tests" / "test_mod.py").write_text(test)
    nodeid = "tests/test_mod.py::test_value"
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=30)) as box:
        with box.patched({"mod.py": module.replace("return 1", "return 5")}):
            patched = box.run_tests([nodeid], warm=True)
        unpatched = box.run_tests([nodeid], warm=True)
        assert box.hot_runs == 2
    assert patched.results[nodeid].status is TestStatus.FAILED
    assert unpatched.results[nodeid].status is TestStatus.PASSED


def test_hot_checks_can_be_turned_off(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    repo = task.materialize(tmp_path / "repo")
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=30), hot=False) as box:
        run = box.run_tests([F2P], stop_first=True, warm=True)
        assert box.hot_runs == 0 and box.warm_runs == 1
    assert run.results[F2P].status is TestStatus.FAILED


@pytest.mark.slow
def test_check_candidates_side_by_side_reach_the_verdicts_of_one_at_a_time(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    repo = task.materialize(tmp_path / "repo")
    buggy = (repo / "mathx.py").read_text()
    fixed = buggy.replace("        return lo\n    return x", "        return hi\n    return x")
    wrong = buggy.replace("if x > hi:", "if x >= hi:")
    module_level = fixed + "\nLIMIT = 3\n"  # not swappable: checked the ordinary way, in order
    runaway = buggy.replace("if x > hi:", "while True:\n        pass\n    if x > hi:")
    broken = buggy.replace("def clamp", "def clamp(:")  # does not even parse
    texts = [buggy, fixed, wrong, module_level, runaway, fixed, broken]
    with PytestSandbox(
        repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=30), parallel_checks=2
    ) as box:
        checks = [CandidateCheck(files={"mathx.py": t}, nodeids=(F2P,), wall_seconds=2.0) for t in texts]
        runs = box.check_candidates(checks)
        assert box.hot_runs == 5  # all but the module-level edit and the one that does not parse
        assert box.read_file("mathx.py") == buggy  # nothing left patched
        one_by_one = []
        for text in texts:
            with box.patched({"mathx.py": text}):
                one_by_one.append(box.run_tests([F2P], stop_first=True, warm=True, wall_seconds=2.0))
    passed = [F2P in run.passing() for run in runs]
    assert passed == [F2P in run.passing() for run in one_by_one]
    assert passed == [False, True, False, True, False, True, False]
    assert runs[4].timed_out  # the runaway was cut (wall or CPU limit), not waited for


def test_parallel_checks_must_be_positive(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    with pytest.raises(InputError):
        PytestSandbox(tmp_path / "repo", [sys.executable, "-m", "pytest"], parallel_checks=0)


@pytest.mark.slow
def test_a_long_heal_does_not_run_the_workers_out_of_file_descriptors(tmp_path: Path) -> None:
    # Each check waits on its child through a pidfd; with 40 descriptors allowed, 60 checks would exhaust them if
    # any were kept open, and the next child could not even open its log.
    task = load_task(TASKS / "tiny-clamp-name.json")
    repo = task.materialize(tmp_path / "repo")
    buggy = (repo / "mathx.py").read_text()
    fixed = buggy.replace("        return lo\n    return x", "        return hi\n    return x")
    limits = Limits(wall_seconds=30, open_files=40)
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=limits, parallel_checks=2) as box:
        runs = box.check_candidates([CandidateCheck(files={"mathx.py": fixed}, nodeids=(F2P,))] * 60)
        assert box.hot_runs == 60
    assert all(run.results[F2P].status is TestStatus.PASSED for run in runs)
