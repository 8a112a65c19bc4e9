"""PytestSandbox: real pytest runs on a scratch copy, with the collector plugin recording results."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.offline.engine import OfflineEngine
from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import CALC, write_project

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def area(w, h):
            return w * h


        def explode():
            raise ValueError("bad value 42")
        """,
    "tests/test_core.py": """
        import os

        import pytest

        from pkg.core import area, explode


        def test_area():
            assert area(2, 3) == 6


        def test_explode():
            explode()


        @pytest.mark.parametrize("w", [1, 2])
        def test_param(w):
            assert area(w, 1) == 1


        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass


        @pytest.fixture
        def broken():
            raise RuntimeError("fixture down")


        def test_fixture_error(broken):
            pass


        def test_no_secrets_visible():
            assert "GITHUB_TOKEN" not in os.environ
            assert "ANTHROPIC_API_KEY" not in os.environ
        """,
}


def test_results_frames_and_coverage(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(PROJECT)
    run = sandbox.run_tests(coverage=True)
    status = {n: r.status for n, r in run.results.items()}
    assert status == {
        "tests/test_core.py::test_area": TestStatus.PASSED,
        "tests/test_core.py::test_explode": TestStatus.FAILED,
        "tests/test_core.py::test_param[1]": TestStatus.PASSED,
        "tests/test_core.py::test_param[2]": TestStatus.FAILED,
        "tests/test_core.py::test_skipped": TestStatus.SKIPPED,
        "tests/test_core.py::test_fixture_error": TestStatus.ERROR,
        "tests/test_core.py::test_no_secrets_visible": TestStatus.PASSED,
    }
    explode = run.results["tests/test_core.py::test_explode"]
    assert (explode.exc_type, explode.message) == ("ValueError", "bad value 42")
    # Frames are pruned to the project's own files, with repo-relative paths, outermost first.
    assert [(f.file, f.function) for f in explode.frames] == [
        ("tests/test_core.py", "test_explode"),
        ("pkg/core.py", "explode"),
    ]
    assert run.results["tests/test_core.py::test_fixture_error"].exc_type == "RuntimeError"
    assert run.coverage is not None
    assert run.coverage["tests/test_core.py::test_area"]["pkg/core.py"] == [2]
    assert run.coverage["tests/test_core.py::test_explode"]["pkg/core.py"] == [6]


def test_secrets_in_the_parent_environment_do_not_reach_tests(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "p", PROJECT)
    env = {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "ghp_secret", "ANTHROPIC_API_KEY": "sk-ant-secret"}
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], env_source=env, scratch_parent=tmp_path) as sandbox:
        run = sandbox.run_tests(["tests/test_core.py::test_no_secrets_visible"])
    assert run.results["tests/test_core.py::test_no_secrets_visible"].status is TestStatus.PASSED


@pytest.mark.slow
def test_a_hanging_test_is_cut_and_the_rest_still_run(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(
        {
            "m.py": "def spin():\n    while True:\n        pass\n",
            "tests/test_m.py": "from m import spin\n\ndef test_a():\n    pass\n\n"
            "def test_hangs():\n    spin()\n\ndef test_z():\n    assert 1 == 2\n",
        },
        wall_seconds=3,
    )
    run = sandbox.run_tests()
    assert run.timed_out
    assert run.results["tests/test_m.py::test_hangs"].status is TestStatus.TIMEOUT
    assert run.results["tests/test_m.py::test_a"].status is TestStatus.PASSED
    assert run.results["tests/test_m.py::test_z"].status is TestStatus.FAILED
    assert run.duration < 60


def test_without_coverage_py_nor_the_line_collector_the_run_says_so(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "p", PROJECT)
    # An interpreter where `import coverage` fails, as in a project environment without coverage.py.
    no_coverage = [
        sys.executable,
        "-c",
        "import sys; sys.modules['coverage'] = None; import pytest; sys.exit(pytest.main(sys.argv[1:]))",
    ]
    with PytestSandbox(repo, no_coverage, scratch_parent=tmp_path, line_collector="never") as sandbox:
        run = sandbox.run_tests(coverage=True)
    assert run.coverage is None
    assert "coverage.py is not installed" in run.coverage_note
    assert run.results["tests/test_core.py::test_area"].status is TestStatus.PASSED


def test_patched_files_are_restored_and_the_user_tree_is_untouched(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(PROJECT)
    original = sandbox.read_file("pkg/core.py")
    with sandbox.patched({"pkg/core.py": original.replace("w * h", "w + h"), "pkg/new.py": "X = 1\n"}):
        run = sandbox.run_tests(["tests/test_core.py::test_area"])
        assert run.results["tests/test_core.py::test_area"].status is TestStatus.FAILED
    assert sandbox.read_file("pkg/core.py") == original
    assert not (sandbox.root / "pkg/new.py").exists()
    assert (sandbox.repo / "pkg/core.py").read_text() == original
    assert sandbox.source_files() == ["pkg/__init__.py", "pkg/core.py"]


def test_scratch_tests_must_stay_in_the_qa_folder(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(PROJECT)
    with pytest.raises(SandboxError):
        sandbox.run_tests(extra_test_files={"tests/test_core.py": "def test_x():\n    pass\n"})
    with pytest.raises(SandboxError):
        sandbox.run_tests(extra_test_files={"_selfix_qa/../pkg/core.py": "X = 1\n"})
    with pytest.raises(SandboxError):
        sandbox.read_file("../outside.py")


def test_a_test_command_that_cannot_run_is_an_error(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "p", PROJECT)
    argv = [sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(4)"]
    with PytestSandbox(repo, argv, limits=Limits(wall_seconds=30), scratch_parent=tmp_path) as sandbox:
        with pytest.raises(SandboxError, match="boom"):
            sandbox.run_tests()


def test_warm_worker_reaches_the_same_verdicts_as_a_cold_run(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(PROJECT)
    ids = ["tests/test_core.py::test_area", "tests/test_core.py::test_explode", "tests/test_core.py::test_param"]
    cold = sandbox.run_tests(ids)
    warm = sandbox.run_tests(ids, warm=True)
    assert sandbox.warm_runs == 1
    assert {n: r.status for n, r in warm.results.items()} == {n: r.status for n, r in cold.results.items()}
    assert warm.results["tests/test_core.py::test_explode"].message == "bad value 42"
    # The worker imports the project afresh per run: a patched module is seen at once.
    original = sandbox.read_file("pkg/core.py")
    with sandbox.patched({"pkg/core.py": original.replace("w * h", "w + h")}):
        patched = sandbox.run_tests(["tests/test_core.py::test_area"], warm=True)
    assert patched.results["tests/test_core.py::test_area"].status is TestStatus.FAILED
    again = sandbox.run_tests(["tests/test_core.py::test_area"], warm=True)
    assert again.results["tests/test_core.py::test_area"].status is TestStatus.PASSED
    assert sandbox.warm_runs == 3


@pytest.mark.slow
def test_warm_worker_run_that_hangs_is_cut(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(
        {"m.py": "X = 1\n", "tests/test_m.py": "def test_hangs():\n    while True:\n        pass\n"},
        wall_seconds=2,
    )
    run = sandbox.run_tests(["tests/test_m.py::test_hangs"], stop_first=True, warm=True)
    assert run.timed_out
    assert "tests/test_m.py::test_hangs" not in run.results or not run.results["tests/test_m.py::test_hangs"].ok
    # The worker survives its child's timeout and serves the next run.
    run = sandbox.run_tests(["tests/test_m.py::test_hangs"], stop_first=True, warm=True)
    assert run.timed_out and sandbox.warm_runs == 2


def test_other_test_commands_run_cold(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "p", PROJECT)
    argv = [sys.executable, "-c", "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))"]
    with PytestSandbox(repo, argv, scratch_parent=tmp_path) as sandbox:
        run = sandbox.run_tests(["tests/test_core.py::test_area"], warm=True)
        assert run.results["tests/test_core.py::test_area"].status is TestStatus.PASSED
        assert sandbox.warm_runs == 0


# -- the tests to run, whatever the test command names and whichever pytest ------------------------------------
PINNED_PYTEST = "7.4.4"  # common in pinned projects: it refuses positional arguments after "--" once one was given
TWO_TESTS = {
    "m.py": "X = 1\n",
    "tests/test_x.py": "def test_a():\n    assert 1 == 2\n\n\ndef test_b():\n    pass\n",
}


def _pinned_pytest_version(python: Path) -> str:
    if not python.exists():
        return ""
    proc = subprocess.run(
        [str(python), "-c", "import pytest; print(pytest.__version__)"], capture_output=True, text=True, timeout=60
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


@pytest.fixture(scope="session")
def pinned_pytest_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter with pytest 7.4.4 in a venv made with ``python -m venv`` + pip, once per session (one
    folder shared by the xdist workers, under a lock). Skipped when pip cannot install it (no package index)."""
    root = tmp_path_factory.getbasetemp().parent / f"selfix-pytest-{PINNED_PYTEST}"
    python = root / "bin" / "python"
    with open(root.with_name(root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _pinned_pytest_version(python) != PINNED_PYTEST:
            shutil.rmtree(root, ignore_errors=True)
            made = subprocess.run(
                [sys.executable, "-m", "venv", str(root)], capture_output=True, text=True, timeout=300
            )
            if made.returncode != 0:
                pytest.skip(f"cannot make a venv for pytest {PINNED_PYTEST}: {made.stderr.strip()[-500:]}")
            install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--retries", "1"]
            proc = subprocess.run([*install, f"pytest=={PINNED_PYTEST}"], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0 or _pinned_pytest_version(python) != PINNED_PYTEST:
                shutil.rmtree(root, ignore_errors=True)
                pytest.skip(f"pip could not install pytest {PINNED_PYTEST} (no package index?): {proc.stderr[-500:]}")
    return str(python)


# The pinned pytest's venv is made once per session (about 10 s, from the index): the slow tier only.
@pytest.fixture(params=["current", pytest.param(PINNED_PYTEST, marks=pytest.mark.slow)])
def pytest_python(request: pytest.FixtureRequest) -> str:
    """The interpreter of the project's tests: this one (the current pytest), or one with pytest 7.4.4."""
    if request.param == "current":
        return sys.executable
    return str(request.getfixturevalue("pinned_pytest_python"))


@pytest.mark.slow
def test_selected_tests_run_alone_with_a_test_path_in_the_command(tmp_path: Path, pytest_python: str) -> None:
    """``python -m pytest tests/test_x.py``: a run of ``test_b`` runs ``test_b`` only, cold, fork-per-run and hot.
    The node ids used to follow the command after a ``--``: pytest 7.4 refused that (usage error, exit 4), and
    newer pytest ran the command's path beside them (with -x, stopping at ``test_a`` before ``test_b`` ran)."""
    repo = write_project(tmp_path / "p", TWO_TESTS)
    command = [pytest_python, "-m", "pytest", "tests/test_x.py"]
    for hot in (False, True):
        with PytestSandbox(repo, command, scratch_parent=tmp_path, hot=hot) as sandbox:
            for warm in (False, True):
                run = sandbox.run_tests(["tests/test_x.py::test_b"], stop_first=True, warm=warm)
                assert {n: r.status for n, r in run.results.items()} == {"tests/test_x.py::test_b": TestStatus.PASSED}
                assert run.error == ""
            assert sandbox.warm_runs == 1 and sandbox.hot_runs == (1 if hot else 0)
            # A scratch QA test, outside the command's path, runs alone too.
            qa = {"_selfix_qa/test_q.py": "def test_q():\n    assert 2 + 2 == 5\n"}
            run = sandbox.run_tests(["_selfix_qa/test_q.py"], extra_test_files=qa)
            assert {n: r.status for n, r in run.results.items()} == {"_selfix_qa/test_q.py::test_q": TestStatus.FAILED}
            # The whole suite is still what the command names.
            assert set(sandbox.run_tests().results) == {"tests/test_x.py::test_a", "tests/test_x.py::test_b"}


@pytest.mark.parametrize(
    ("case", "code"),
    [("usage-error", 4), ("internal-error", 3), ("no-test-ran", 5)],
)
def test_a_run_pytest_could_not_finish_never_reads_as_passed(
    tmp_path: Path, pytest_python: str, case: str, code: int
) -> None:
    """Asked for ``test_b``, pytest ends with a usage error, an internal error or no test at all: ``test_b`` never
    comes back as passed, and the run (or the sandbox's error) says what happened."""
    files, options, asked = dict(TWO_TESTS), [], ["tests/test_x.py::test_b"]
    if case == "usage-error":
        options = ["--no-such-option"]
    elif case == "internal-error":
        files["conftest.py"] = "def pytest_collection_modifyitems(items):\n    raise RuntimeError('boom')\n"
    else:
        options = ["-k", "nothing_is_called_this"]
    repo = write_project(tmp_path / "p", files)
    with PytestSandbox(repo, [pytest_python, "-m", "pytest", *options], scratch_parent=tmp_path) as sandbox:
        try:
            run = sandbox.run_tests(asked)
        except SandboxError as exc:  # nothing ran at all: the sandbox refuses to make up a result
            assert f"exit {code}" in str(exc)
            return
    assert "tests/test_x.py::test_b" not in run.passing()
    assert f"exit {code}" in run.error


def test_a_module_that_cannot_be_collected_is_an_error_and_the_other_tests_still_run(
    tmp_path: Path, pytest_python: str
) -> None:
    """pytest alone runs no test when one module it collects fails at import (exit 2, "Interrupted"); selfix's
    runs go on with the others (``--continue-on-collection-errors``), the module an error of its own, the run's
    exit 1 and a note saying so."""
    files = {**TWO_TESTS, "tests/test_bad.py": "def test_c(:\n    pass\n"}
    repo = write_project(tmp_path / "p", files)
    with PytestSandbox(repo, [pytest_python, "-m", "pytest"], scratch_parent=tmp_path) as sandbox:
        run = sandbox.run_tests(["tests/test_x.py::test_b", "tests/test_bad.py"])
        notes = sandbox.config_overrides
    assert run.results["tests/test_x.py::test_b"].status is TestStatus.PASSED
    bad = run.results["tests/test_bad.py"]
    assert bad.status is TestStatus.ERROR and bad.exc_type == "CollectionError" and "SyntaxError" in bad.message
    assert run.returncode == 1 and "tests/test_bad.py" in run.failing()
    assert any("failed to collect" in note for note in notes)


@pytest.mark.slow
def test_the_loop_heals_with_a_test_path_in_the_command(tmp_path: Path, pytest_python: str) -> None:
    """``python -m pytest tests/test_calc.py`` under pytest 7.4: the reproduction re-run used to be refused by
    pytest, its missing results read as "passed", and the real failure reported as probably flaky (exit 3)."""
    repo = write_project(tmp_path / "p", CALC)
    command = [pytest_python, "-m", "pytest", "tests/test_calc.py"]
    with PytestSandbox(repo, command, limits=Limits(wall_seconds=60), scratch_parent=tmp_path) as sandbox:
        result = HealingLoop(sandbox, OfflineEngine()).run()
    report = result.report
    assert report.stop_reason is StopReason.HEALED and report.exit_code == 0
    assert report.f2p_tests == ("tests/test_calc.py::test_add",) and report.flaky_tests == ()
    assert result.files is not None and "return a + b" in result.files["calc.py"]
    assert report.verification == "confirmed on the whole suite"


LONG_STRINGS = {
    "git_cmd.py": "def push(branch):\n    return 'git push --force origin ' + branch\n",
    "tests/test_git.py": "from git_cmd import push\n\n\ndef test_push():\n"
    "    assert push('main') == 'git push --force-with-lease origin main'\n\n\ndef test_other():\n    pass\n",
}


def test_assertion_messages_carry_whole_values_on_every_run_path(tmp_path: Path, pytest_python: str) -> None:
    """pytest shortens compared reprs ('git push --f...ain') below assertion verbosity 2; the collector asks for
    the whole values (pytest 8+: the assertion verbosity only; 7: -vv), cold, fork-per-run and hot, and every
    test still runs."""
    repo = write_project(tmp_path / "p", LONG_STRINGS)
    for hot in (False, True):
        with PytestSandbox(repo, [pytest_python, "-m", "pytest"], scratch_parent=tmp_path, hot=hot) as sandbox:
            for warm in (False, True):
                run = sandbox.run_tests(warm=warm)
                assert set(run.results) == {"tests/test_git.py::test_push", "tests/test_git.py::test_other"}
                message = run.results["tests/test_git.py::test_push"].message
                first = message.splitlines()[0]
                assert "'git push --force origin main'" in first, message
                assert "'git push --force-with-lease origin main'" in first, message
