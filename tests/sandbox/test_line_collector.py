"""selfix's own per-test line collector (the plugin's LineCollector), for project environments without coverage.py:
the same per-test lines as coverage.py on the same runs, only the project's files, and the localization it feeds."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.pytest_sandbox import PLUGIN_DIR, PytestSandbox
from tests.helpers.projects import write_project

# Calls, branches, loops, a generator, a closure, a method, an exception caught two frames up, a module-level
# constant, a test helper, a parametrized test and a test that fails: the shapes localization reads.
PROJECT = {
    "pkg/__init__.py": "",
    "pkg/shapes.py": """
        LIMIT = 10


        def clamp(x):
            if x > LIMIT:
                return LIMIT
            return x


        def evens(n):
            for i in range(n):
                if i % 2 == 0:
                    yield i


        def adder(k):
            def add(x):
                return x + k

            return add


        class Box:
            def __init__(self, items):
                self.items = list(items)

            def total(self):
                total = 0
                for item in self.items:
                    total += clamp(item)
                return total


        def risky(x):
            if x < 0:
                raise ValueError("negative")
            return x
        """,
    "tests/test_shapes.py": """
        import pytest

        from pkg.shapes import Box, adder, clamp, evens, risky


        def helper(value):
            return clamp(value) * 2


        def test_clamp_low():
            assert clamp(3) == 3


        @pytest.mark.parametrize("x", [11, 50])
        def test_clamp_high(x):
            assert clamp(x) == 10


        def test_evens():
            assert list(evens(5)) == [0, 2, 4]


        def test_box():
            assert Box([1, 20]).total() == 11


        def test_closure_and_helper():
            assert adder(2)(3) == 5 and helper(4) == 8


        def test_risky_fails():
            try:
                risky(-1)
            except ValueError:
                pass
            assert risky(2) == 3
        """,
}
NO_COVERAGE = "import sys; sys.modules['coverage'] = None; import pytest; sys.exit(pytest.main(sys.argv[1:]))"


def _coverage(tmp_path: Path, name: str, command: list[str], collector: str) -> tuple[dict, str]:  # type: ignore[type-arg]
    repo = write_project(tmp_path / name, PROJECT)
    with PytestSandbox(repo, command, scratch_parent=tmp_path, line_collector=collector) as sandbox:
        run = sandbox.run_tests(coverage=True)
        assert run.results["tests/test_shapes.py::test_risky_fails"].status is TestStatus.FAILED
        assert run.coverage is not None, run.output_tail
        assert run.coverage_collector == sandbox.coverage_collector  # the run says what measured it, for the report
        return run.coverage, run.coverage_collector


@pytest.mark.slow
def test_the_collector_sees_the_lines_coverage_py_sees(tmp_path: Path) -> None:
    expected, by = _coverage(tmp_path, "with-coverage", [sys.executable, "-m", "pytest"], "fallback")
    assert by == "coverage.py"
    ours, kind = _coverage(tmp_path, "collector", [sys.executable, "-m", "pytest"], "always")
    assert kind == ("sys.monitoring" if sys.version_info >= (3, 12) else "sys.settrace")
    assert ours == expected
    # Per test, not per run: the low clamp never reaches the line that caps.
    assert ours["tests/test_shapes.py::test_clamp_low"]["pkg/shapes.py"] == [5, 7]
    assert ours["tests/test_shapes.py::test_clamp_high[11]"]["pkg/shapes.py"] == [5, 6]


@pytest.mark.slow
def test_without_coverage_py_the_collector_stands_in(tmp_path: Path) -> None:
    expected, _ = _coverage(tmp_path, "with-coverage", [sys.executable, "-m", "pytest"], "fallback")
    ours, kind = _coverage(tmp_path, "no-coverage", [sys.executable, "-c", NO_COVERAGE], "fallback")
    assert kind in ("sys.settrace", "sys.monitoring")
    assert ours == expected


def test_only_the_projects_files_are_measured(tmp_path: Path) -> None:
    # In this process: the scratch copy never holds a venv, so through PytestSandbox the filter is not visible.
    spec = importlib.util.spec_from_file_location("selfix_collector_under_test", PLUGIN_DIR / "selfix_collector.py")
    assert spec is not None and spec.loader is not None
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    root = tmp_path / "root"
    sources = [
        (root / "mod.py", "def f(x):\n    y = x + 1\n    return y\n"),
        (root / ".venv" / "lib" / "site-packages" / "dep.py", "def f(x):\n    return x\n"),
        (tmp_path / "outside" / "other.py", "def f(x):\n    return x\n"),
    ]
    functions = []
    for path, text in sources:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        namespace: dict[str, Any] = {}
        exec(compile(text, str(path), "exec"), namespace)
        functions.append(namespace["f"])
    previous = sys.gettrace()
    collector = plugin.LineCollector(str(root))
    collector.start()
    try:
        for function in functions:
            function(1)  # between tests: belongs to none
        collector.switch("t")
        for function in functions:
            function(1)
        collector.switch(None)
    finally:
        data = collector.stop()
        sys.settrace(previous)
    assert data == {"t": {os.path.realpath(root / "mod.py"): [2, 3]}}


def _python_312_with_pytest() -> str | None:
    """An interpreter of Python 3.12+ that has pytest (sys.monitoring), if this machine has one."""
    if sys.version_info >= (3, 12):
        return sys.executable
    for name in ("python3.13", "python3.12"):
        found = shutil.which(name, path=os.environ.get("SELFIX_TEST_PY312_PATH", os.defpath))
        if found and subprocess.run([found, "-c", "import pytest"], capture_output=True, timeout=60).returncode == 0:
            return found
    return None


def test_sys_monitoring_collector_matches_settrace(tmp_path: Path) -> None:
    python = _python_312_with_pytest()
    if python is None:
        pytest.skip("no Python 3.12+ with pytest here (set SELFIX_TEST_PY312_PATH to its bin dir) for sys.monitoring")
    settrace, _ = _coverage(tmp_path, "settrace", [sys.executable, "-c", NO_COVERAGE], "fallback")
    monitored, kind = _coverage(tmp_path, "monitoring", [python, "-c", NO_COVERAGE], "fallback")
    assert kind == "sys.monitoring"
    assert monitored == settrace
