from __future__ import annotations

import sys
from pathlib import Path

from selfix_action.bench.speed import VerdictCache
from selfix_action.bench.tasks import load_task, materialize
from selfix_action.engine.models import TestStatus
from selfix_action.sandbox.hotswap import HotPytestSandbox, skeleton
from selfix_action.sandbox.process import Limits

TASKS = Path(__file__).parent / "fixtures" / "tasks"
F2P = "tests/test_mathx.py::test_clamp_high"


def test_skeleton_ignores_function_bodies_only() -> None:
    base = "X = 1\n\ndef f(a, b=2):\n    return a + b\n"
    assert skeleton(base) == skeleton(base.replace("a + b", "a - b"))
    assert skeleton(base) != skeleton(base.replace("X = 1", "X = 2"))
    assert skeleton(base) != skeleton(base.replace("b=2", "b=3"))


def test_hot_checks_reach_the_cold_verdicts(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-clamp-name.json")
    repo = materialize(task, tmp_path / "repo")
    buggy = (repo / "mathx.py").read_text()
    fixed = buggy.replace("        return lo\n    return x", "        return hi\n    return x")
    wrong = buggy.replace("if x > hi:", "if x >= hi:")
    module_level = fixed + "\nLIMIT = 3\n"
    with HotPytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=30)) as box:
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


def test_verdict_cache_keys_on_normalized_source() -> None:
    cache = VerdictCache()
    cache.put({"m.py": "x = 1 + 2\n"}, True)
    assert cache.get({"m.py": "x = (1 + 2)  # same program\n"}) is True
    assert cache.get({"m.py": "x = 1 - 2\n"}) is None
    assert cache.hits == 1
