"""The project's own pytest configuration as CI uses it: ``addopts`` with pytest-xdist, pytest-randomly and
pytest-rerunfailures, pytest-django's settings, options that touch selfix's own plugin arguments. selfix keeps the
configuration and overrides only what it must (the collector plugin's ``_overrides``), and says so in the report;
the hot and warm checks keep working."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox, pytest_command
from tests.helpers.projects import CALC, FIXED, write_project


def _needs(*modules: str) -> pytest.MarkDecorator:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed here: {', '.join(missing)} (the dev extra has it)")


XDIST_RANDOMLY = _needs("xdist", "pytest_randomly")
ADD = "tests/test_calc.py::test_add"


def _calc(root: Path, ini: str, extra: dict[str, str] | None = None) -> Path:
    return write_project(root, {**CALC, "pytest.ini": ini, **(extra or {})})


def _sandbox(repo: Path) -> PytestSandbox:
    return PytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=60))


@XDIST_RANDOMLY
def test_xdist_and_randomly_addopts_keep_the_hot_worker(tmp_path: Path) -> None:
    repo = _calc(tmp_path / "p", "[pytest]\naddopts = -n 2 -p randomly\n")
    with _sandbox(repo) as box:
        # With xdist's workers the controller collects nothing and runs the suite itself: the hot worker never
        # got to serve a check.
        assert box.start_hot_worker(), box.hot_unavailable
        with box.patched({"calc.py": FIXED}):
            fixed = box.run_tests([ADD], stop_first=True, warm=True)
        buggy = box.run_tests([ADD], stop_first=True, warm=True)
        assert box.hot_runs == 2
        # The collector still records every result and each test's lines, in-process.
        full = box.run_tests(coverage=True)
        overrides = box.config_overrides
    assert fixed.results[ADD].status is TestStatus.PASSED
    assert buggy.results[ADD].status is TestStatus.FAILED
    assert set(full.results) == {ADD, "tests/test_calc.py::test_add_zero", "tests/test_calc.py::test_double"}
    assert full.coverage is not None and "calc.py" in full.coverage[ADD]
    assert "-n 2 -> no xdist workers (selfix runs candidates side by side itself)" in overrides
    assert any(o.startswith("pytest-randomly: random order -> file order, seed 1") for o in overrides)


@pytest.mark.slow
@XDIST_RANDOMLY
def test_randomly_gives_every_run_the_same_order_and_random_state(tmp_path: Path) -> None:
    """Tests that draw random numbers see the same ones in the same order in every run: the baseline's and a
    candidate's verdicts never differ by chance; a seed the project pins is kept."""
    log = tmp_path / "draws"
    draws = {
        f"tests/test_draw_{i}.py": f"""
            import random


            def test_draw_{i}():
                with open({str(log)!r}, "a") as handle:
                    handle.write("{i} %r\\n" % random.random())
            """
        for i in range(4)
    }
    runs = []
    for ini in ("[pytest]\naddopts = -p randomly\n", "[pytest]\naddopts = -p randomly --randomly-seed=7\n"):
        repo = _calc(tmp_path / f"p{len(runs)}", ini, draws)
        with _sandbox(repo) as box:
            seen = []
            for _ in range(2):
                box.run_tests()
                seen.append(log.read_text())
                log.unlink()
            runs.append((seen, box.config_overrides))
    (free, free_notes), (pinned, pinned_notes) = runs
    assert free[0] == free[1] and pinned[0] == pinned[1]
    assert [line.split()[0] for line in free[0].splitlines()] == ["0", "1", "2", "3"]  # the files' order
    assert free[0] != pinned[0]  # seed 7 kept: other draws than with selfix's own seed
    assert free_notes == (
        "pytest-randomly: random order -> file order, seed 1 in every run (every run sees the same order and random "
        "state)",
    )
    assert pinned_notes == (
        "pytest-randomly: random order -> file order (every run sees the same order and random state)",
    )


@_needs("pytest_rerunfailures")
def test_reruns_addopts_run_each_test_once(tmp_path: Path) -> None:
    attempts = tmp_path / "attempts"
    counting = {
        "tests/test_count.py": f"""
            from calc import add


            def test_counted():
                with open({str(attempts)!r}, "a") as handle:
                    handle.write("x")
                assert add(1, 1) == 2
            """
    }
    repo = _calc(tmp_path / "p", "[pytest]\naddopts = --reruns 2 --reruns-delay 1\n", counting)
    with _sandbox(repo) as box:
        box.run_tests(["tests/test_count.py::test_counted"])
        assert attempts.read_text() == "x"  # not three attempts, one second apart
        assert box.start_hot_worker(), box.hot_unavailable
        with box.patched({"calc.py": FIXED}):
            run = box.run_tests([ADD, "tests/test_count.py::test_counted"], stop_first=True, warm=True)
        assert box.hot_runs == 1
        overrides = box.config_overrides
    assert run.results["tests/test_count.py::test_counted"].status is TestStatus.PASSED
    assert "--reruns 2 -> --reruns 0 (each test runs once; a failure is a failure)" in overrides


@pytest.mark.slow
@XDIST_RANDOMLY
def test_heals_a_project_with_xdist_and_randomly_addopts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _calc(tmp_path / "p", "[pytest]\naddopts = -n 2 -p randomly --strict-markers\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=60)

    code = main(["fix", str(repo), "--quiet", "--test-timeout", "30"])

    assert code == 0, capsys.readouterr().err
    report = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert report["stop_reason"] == "healed"
    assert report["process_runs"]["hot"] > 0, report["process_runs"]
    assert "-n 2 -> no xdist workers (selfix runs candidates side by side itself)" in report["pytest_overrides"]
    markdown = (repo / ".selfix" / "report.md").read_text(encoding="utf-8")
    assert "- The project's pytest configuration, kept except: -n 2 -> no xdist workers" in markdown


DJANGO = {
    "settings.py": """
        SECRET_KEY = "not-a-secret"
        INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
        DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
        USE_TZ = True
        PRICE_FACTOR = 2
        """,
    "shop/__init__.py": "",
    "shop/prices.py": """
        from django.conf import settings


        def price(amount):
            return amount * settings.PRICE_FACTOR + 1
        """,
    "tests/test_prices.py": """
        import pytest
        from django.contrib.auth.models import User

        from shop.prices import price


        def test_price():
            assert price(3) == 6


        @pytest.mark.django_db
        def test_users():
            User.objects.create(username="a")
            assert User.objects.count() == 1
        """,
}
PRICE = "tests/test_prices.py::test_price"
USERS = "tests/test_prices.py::test_users"


@_needs("pytest_django", "django", "xdist")
@pytest.mark.parametrize(
    "ini",
    ["[pytest]\nDJANGO_SETTINGS_MODULE = settings\naddopts = -n 2\n", "[pytest]\naddopts = --ds=settings -n 2\n"],
    ids=["settings-in-ini", "ds-option"],
)
def test_django_project_runs_in_the_sandbox_with_hot_checks(tmp_path: Path, ini: str) -> None:
    """pytest-django's settings from the ini file or ``--ds``, with xdist's workers as such projects' CI has them:
    the suite runs (a database test on sqlite in memory), and candidate checks are hot."""
    repo = write_project(tmp_path / "p", {**DJANGO, "pytest.ini": ini})
    fixed = (repo / "shop/prices.py").read_text().replace(" + 1", "")
    with _sandbox(repo) as box:
        baseline = box.run_tests()
        assert box.start_hot_worker(), box.hot_unavailable
        with box.patched({"shop/prices.py": fixed}):
            check = box.run_tests([PRICE, USERS], stop_first=True, warm=True)
        assert box.hot_runs == 1
    assert baseline.results[PRICE].status is TestStatus.FAILED
    assert baseline.results[USERS].status is TestStatus.PASSED
    assert {n: r.status for n, r in check.results.items()} == {PRICE: TestStatus.PASSED, USERS: TestStatus.PASSED}


def test_strict_markers_doctests_and_stop_first_addopts_beside_selfixs_own_options(tmp_path: Path) -> None:
    """``--strict-markers``, ``-p no:cacheprovider`` (selfix passes it too) and ``--doctest-modules`` are kept
    beside selfix's own ``-p`` plugins and options; the project's ``-x`` is not, or a baseline would stop at its
    first failure with the other tests never run."""
    doctested = {"calc.py": '"""\n>>> double(2)\n4\n"""\n\n\n' + CALC["calc.py"].replace("        ", "")}
    ini = "[pytest]\naddopts = -x --strict-markers -p no:cacheprovider --doctest-modules\n"
    repo = _calc(tmp_path / "p", ini, doctested)
    with _sandbox(repo) as box:
        full = box.run_tests()
        with box.patched({"calc.py": doctested["calc.py"].replace("a - b", "a + b")}):
            check = box.run_tests([ADD, "tests/test_calc.py::test_add_zero"], stop_first=True, warm=True)
        assert box.hot_runs == 1
        overrides = box.config_overrides
    assert {n: r.status.value for n, r in full.results.items()} == {
        "calc.py::calc": "passed",
        ADD: "failed",
        "tests/test_calc.py::test_add_zero": "passed",
        "tests/test_calc.py::test_double": "passed",
    }
    assert all(r.status is TestStatus.PASSED for r in check.results.values()) and len(check.results) == 2
    assert "-x/--maxfail=1 -> every test runs (selfix needs each test's result)" in overrides


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (["py3", "-m", "pytest"], None),  # not an interpreter's name: the command as given
        (["python", "-m", "pytest", "-q"], ("python", [], ["-q"], ())),
        (
            ["/v/bin/python3.12", "-I", "-bb", "-W", "error", "-Xdev", "-m", "pytest", "tests"],
            ("/v/bin/python3.12", ["-s", "-bb", "-W", "error", "-Xdev"], ["tests"], ("-I -> -s",)),
        ),
        (["python", "-IE", "-m", "pytest"], ("python", ["-s"], [], ("-IE -> -s",))),
        (["python", "-E", "-m", "pytest"], ("python", [], [], ("-E -> (none)",))),
        (["python", "script.py"], None),
        (["python", "-m", "unittest"], None),
    ],
)
def test_the_test_commands_interpreter_options_are_read(argv: list[str], parts: tuple | None) -> None:
    found = pytest_command(argv)
    if parts is None:
        assert found is None
        return
    assert found is not None and found[:3] == parts[:3]
    assert all(change in found[3][0] for change in parts[3]) and len(found[3]) == (1 if parts[3] else 0)


def test_an_isolated_interpreter_still_runs_selfixs_plugins_and_the_hot_worker(tmp_path: Path) -> None:
    """CI's ``python -I -bb -Werror -m pytest`` ignores PYTHONPATH: selfix's collector could not load and no test
    ran ("Error importing plugin selfix_collector"). ``-I`` becomes ``-s``; the other flags stay, in the workers
    too."""
    repo = _calc(tmp_path / "p", "[pytest]\n")
    with PytestSandbox(
        repo, [sys.executable, "-I", "-bb", "-Werror", "-m", "pytest"], limits=Limits(wall_seconds=60)
    ) as box:
        baseline = box.run_tests(coverage=True)
        assert baseline.results[ADD].status is TestStatus.FAILED, baseline.output_tail
        assert any("-I -> -s" in note for note in box.config_overrides)
        assert box.start_hot_worker(), box.hot_unavailable
        with box.patched({"calc.py": FIXED}):
            run = box.run_tests([ADD], stop_first=True, warm=True)
        assert run.results[ADD].status is TestStatus.PASSED and box.hot_runs == 1


def test_the_cache_plugins_options_in_addopts_are_accepted_and_undone(tmp_path: Path) -> None:
    """selfix's ``-p no:cacheprovider`` dropped ``--lf``/``--ff``/``--nf`` and ``--sw`` with the plugins: a project
    naming one in addopts was refused ("unrecognized arguments", exit 4). They are accepted, do nothing, and are
    reported."""
    repo = _calc(tmp_path / "p", "[pytest]\naddopts = --lf --nf --sw\n")
    with _sandbox(repo) as box:
        full = box.run_tests(coverage=True)
        assert box.start_hot_worker(), box.hot_unavailable
        with box.patched({"calc.py": FIXED}):
            fixed = box.run_tests([ADD], stop_first=True, warm=True)
        overrides = box.config_overrides
    assert set(full.results) == {ADD, "tests/test_calc.py::test_add_zero", "tests/test_calc.py::test_double"}
    assert full.results[ADD].status is TestStatus.FAILED and fixed.results[ADD].status is TestStatus.PASSED
    assert "--lf -> ignored (selfix chooses the tests each run runs)" in overrides
    assert "--sw -> ignored (selfix chooses the tests each run runs)" in overrides
