"""Every project Python from 3.8 to 3.13 heals, at ``bwrap`` and at ``landlock``.

selfix's pytest plugins (collector, fork-per-run and hot workers) run inside the project's own interpreter, which
is not selfix's: the composite action runs the workflow's `python`, and `--test-cmd <venv>/bin/python -m pytest`
names any. Each case builds a virtual environment of one interpreter this machine has (pyenv's, or a
`python3.X` on PATH), installs pytest into it from the package index, and heals the `range_sum` example through
`selfix fix` with it. The hot worker must have served the candidate checks: before Python 3.11 code objects
have no `co_qualname`, and a worker that relied on it rejected every candidate, the right fix among them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import SandboxError
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.isolation import IsolationConfig, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.isolation import traversable
from tests.helpers.project_pythons import PROJECT_PYTHONS, find_interpreter, project_venv, shared_venv_root
from tests.helpers.projects import EXPECTED, changed_lines, copy_example, write_project


@pytest.fixture(scope="session")
def venv_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_venv_root(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("level", ["bwrap", "landlock"])
@pytest.mark.parametrize("version", PROJECT_PYTHONS)
def test_the_example_heals_on_each_project_python(
    version: str, level: str, venv_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        detect_isolation(IsolationConfig(mode=level))
    except SandboxError as exc:
        pytest.skip(f"isolation level {level} is not available on this machine: {exc}")
    python = project_venv(venv_root, version)
    repo = copy_example("range_sum", traversable(tmp_path))
    out = tmp_path / "out"
    code = main(
        ["fix", str(repo), "--test-cmd", f"{python} -m pytest", "--isolation", level, "--out", str(out), "--quiet"]
    )
    captured = capsys.readouterr()
    if code == 2 and "cannot reach" in captured.err + captured.out:
        # landlock has no mount namespace: an interpreter below a 0700 folder (pyenv in /root) is out of the
        # sandbox uid's reach, and selfix refuses it (the field's interpreters live in the runner's tool cache).
        pytest.skip(f"the Python {version} interpreter is out of the sandbox uid's reach at {level} here")
    assert code == 0, captured.err + captured.out
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    expected = EXPECTED["range_sum"]
    removed, added = changed_lines((out / "patch.diff").read_text(encoding="utf-8"))
    assert removed == [expected["buggy"]]
    assert added[0] in (expected["fixed"], *expected["also_acceptable"])
    # The hot worker, not a fallback, served the candidates on this interpreter.
    assert report["process_runs"]["hot"] > 0, report["process_runs"]
    assert report["confidence"]["level"] == "high"


def test_an_unsupported_project_python_is_refused_at_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    interpreter = find_interpreter("2.7")
    if interpreter is None:
        pytest.skip("no Python 2.7 on this machine to stand for an unsupported interpreter")
    repo = copy_example("range_sum", traversable(tmp_path))
    argv = ["fix", str(repo), "--test-cmd", f"{interpreter} -m pytest", "--out", str(tmp_path / "out"), "--quiet"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert "Python 2.7, which selfix does not support" in err
    assert "Python 3.7 or newer" in err


SHAPES = """\
class A:
    def get(self):
        return 1


class B:
    def get(self):
        return 2

    def twice(self):
        def inner(x):
            return x * 2

        return inner(self.get())
"""
SHAPE_TESTS = """\
from shapes import A, B


def test_a():
    assert A().get() == 1


def test_b():
    assert B().get() == 2


def test_twice():
    assert B().twice() == 4
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", PROJECT_PYTHONS)
def test_methods_of_one_name_and_nested_functions_swap_by_qualified_name(
    version: str, venv_root: Path, tmp_path: Path
) -> None:
    """``A.get``/``B.get`` share a code name, ``B.twice.<locals>.inner`` is nested: each patch reaches exactly
    the definition it edits, in the hot worker, with the verdicts of a fresh run."""
    python = project_venv(venv_root, version)
    repo = write_project(tmp_path / "repo", {"shapes.py": SHAPES, "tests/test_shapes.py": SHAPE_TESTS})
    patches = {
        "B.get": SHAPES.replace("return 2", "return 3"),
        "inner": SHAPES.replace("return x * 2", "return x * 3"),
    }
    nodeids = ["tests/test_shapes.py::test_a", "tests/test_shapes.py::test_b", "tests/test_shapes.py::test_twice"]
    with PytestSandbox(repo, [str(python), "-m", "pytest"], limits=Limits(wall_seconds=60)) as box:
        verdicts = {}
        for name, text in patches.items():
            with box.patched({"shapes.py": text}):
                hot = box.run_tests(nodeids, warm=True)
                cold = box.run_tests(nodeids)
            verdicts[name] = {n.split("::")[1]: (hot.results[n].status, cold.results[n].status) for n in nodeids}
        assert box.hot_runs == 2, box.hot_unavailable
    passed, failed = TestStatus.PASSED, TestStatus.FAILED
    # B.get -> 3: test_a still passes (A.get untouched), test_b fails, twice() is 6.
    assert verdicts["B.get"] == {"test_a": (passed, passed), "test_b": (failed, failed), "test_twice": (failed, failed)}
    assert verdicts["inner"] == {"test_a": (passed, passed), "test_b": (passed, passed), "test_twice": (failed, failed)}
