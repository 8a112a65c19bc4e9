"""Every layout pytest collects is one selfix heals from the CI's own JUnit report: a Django-style ``tests.py``,
custom ``python_files``, ``python_classes`` and ``python_functions``, tests in a package, unittest classes, nested
classes, parametrized ids with spaces, brackets and non-ASCII, doctests from ``--doctest-modules`` in ``addopts``,
a ``testpaths`` list, both ``junit_family`` values, and a report written by pytest started from a parent folder
(CI's ``pytest backend``).

The reports are real: pytest runs the project as its CI would, then ``selfix fix --junit`` heals from them. Before
the node ids came from the checkout (``repair.reported``), each of these reports was refused: a JUnit classname
maps to a node id only through the tests pytest collects, not through a naming rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import ExitCode
from selfix_action.junit import parse_report
from selfix_action.repair.reported import ReportedTest, junit_names, resolve_reported
from tests.helpers.projects import write_project

PYTEST_INI = """[pytest]
python_files = tests.py tests_*.py
python_classes = Test* Check*
python_functions = test_* check_*
testpaths = shop checks
addopts = --doctest-modules -p no:cacheprovider
junit_family = {family}
"""

LAYOUTS = {
    "shop/__init__.py": "",
    "shop/prices.py": (
        "def add(a, b):\n"
        '    """The sum of two prices.\n\n'
        "    >>> add(1, 2)\n"
        "    3\n"
        '    """\n'
        "    return a - b\n\n\n"
        "def double(a):\n"
        "    return 2 * a\n"
    ),
    # Django's layout: unittest classes in an app's tests.py.
    "shop/tests.py": (
        "import unittest\n\n"
        "from shop.prices import add, double\n\n\n"
        "class PriceTests(unittest.TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_double(self):\n"
        "        self.assertEqual(double(2), 4)\n"
    ),
    # A project's own python_files, python_classes and python_functions, tests in a package, nested classes,
    # ids with spaces, brackets and non-ASCII.
    "checks/__init__.py": "",
    "checks/tests_prices.py": (
        "import pytest\n\n"
        "from shop.prices import add, double\n\n\n"
        "class TestPrices:\n"
        "    class TestAdd:\n"
        "        def test_small(self):\n"
        "            assert add(2, 2) == 4\n\n"
        "    def test_double(self):\n"
        "        assert double(3) == 6\n\n\n"
        "class CheckSums:\n"
        "    def check_add(self):\n"
        "        assert add(3, 4) == 7\n\n\n"
        '@pytest.mark.parametrize("a, b, total", [(1, 1, 2), (0, 5, 5)], ids=["one and one [x]", "zéro::cinq"])\n'
        "def test_add_cases(a, b, total):\n"
        "    assert add(a, b) == total\n"
    ),
}

FAILING = {
    "shop/prices.py::shop.prices.add",
    "shop/tests.py::PriceTests::test_add",
    "checks/tests_prices.py::TestPrices::TestAdd::test_small",
    "checks/tests_prices.py::CheckSums::check_add",
    "checks/tests_prices.py::test_add_cases[one and one [x]]",
    "checks/tests_prices.py::test_add_cases[z\\xe9ro::cinq]",
}


def _layouts(root: Path, family: str) -> Path:
    return write_project(root, {**LAYOUTS, "pytest.ini": PYTEST_INI.format(family=family)})


def _ci_report(cwd: Path, report: Path, *args: str) -> Path:
    """What the project's CI writes: its pytest, its config, a JUnit file (the run fails: the bug is in)."""
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *args],
        cwd=cwd,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert report.is_file()
    return report


def _collected(repo: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_every_failing_case_of_a_real_report_resolves_to_its_collected_test(tmp_path: Path, family: str) -> None:
    repo = _layouts(tmp_path / "p", family)
    cases = parse_report(_ci_report(repo, tmp_path / "junit.xml"))
    failing = [ReportedTest(c.classname, c.name, c.file, c.nodeid) for c in cases if c.outcome.value == "failed"]
    assert len(failing) == len(FAILING)

    resolution = resolve_reported(failing, _collected(repo))

    assert set(resolution.nodeids) == FAILING and not resolution.unresolved


def test_a_report_from_a_parent_folder_resolves_in_the_project(tmp_path: Path) -> None:
    """CI ran ``pytest backend`` from the repository's root (no config there): the classnames start with
    ``backend.``; in the project's own folder the same tests resolve by the dotted suffix."""
    repo = _layouts(tmp_path / "mono" / "backend", "xunit1")
    (repo / "pytest.ini").unlink()  # the config at the root is what CI's pytest read; here: none, defaults
    more = "from shop.prices import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    (repo / "shop" / "test_more.py").write_text(more)
    cases = parse_report(_ci_report(tmp_path / "mono", tmp_path / "junit.xml", "backend"))
    failing = [ReportedTest(c.classname, c.name, c.file, c.nodeid) for c in cases if c.outcome.value == "failed"]
    assert [c.classname for c in failing] == ["backend.shop.test_more"]

    resolution = resolve_reported(failing, _collected(repo))

    assert resolution.nodeids == ("shop/test_more.py::test_add",) and not resolution.unresolved


def test_a_case_nothing_collected_matches_is_named_with_its_reason() -> None:
    gone = ReportedTest("shop.tests.PriceTests", "test_gone", None, None)
    twin = ReportedTest("tests", "test_x", None, None)

    resolution = resolve_reported([gone, twin], ["a/tests.py::test_x", "b/tests.py::test_x", "shop/tests.py::T::t"])

    assert resolution.nodeids == ()
    assert resolution.missing() == (
        "shop.tests.PriceTests::test_gone (no test collected here has that name)",
        "tests::test_x (ambiguous: 2 collected tests match it equally (b/tests.py::test_x, a/tests.py::test_x))",
    )


@pytest.mark.parametrize(
    ("nodeid", "names"),
    [
        ("tests/test_a.py::test_x", ("tests.test_a", "test_x")),
        ("shop/tests.py::PriceTests::test_add", ("shop.tests.PriceTests", "test_add")),
        ("pkg/mod.py::pkg.mod.func", ("pkg.mod", "pkg.mod.func")),
        ("t.py::test_p[a::b c]", ("t", "test_p[a::b c]")),
        ("t.py::TestA::()::test_b", ("t.TestA", "test_b")),
        ("tests/test_gone.py", ("", "tests.test_gone")),
    ],
)
def test_junit_names_are_the_ones_pytest_writes(nodeid: str, names: tuple[str, str]) -> None:
    assert junit_names(nodeid) == names


@pytest.mark.slow
def test_selfix_heals_every_layout_from_the_ci_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _layouts(tmp_path / "p", "xunit2")
    report = _ci_report(repo, tmp_path / "junit.xml")

    code = main(["fix", str(repo), "--junit", str(report), "--quiet"])

    out = capsys.readouterr().out
    assert code == ExitCode.HEALED, out
    data = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert set(data["f2p_tests"]) == FAILING
    assert "shop/tests.py::PriceTests::test_double" in data["p2p_tests"]
    assert "return a + b" in data["patch"]["diff"]


def test_unittest_subtests_in_a_unittest_xml_report_resolve_to_their_test() -> None:
    """unittest-xml-reporting writes a case per ``subTest`` (``test_valid [quoted-unicode]``, ``test_x (i=1)``);
    pytest runs the test that holds them as one item."""
    cases = [
        ReportedTest("tests.test_data.TestData", "test_valid [quoted-unicode]", "tests/test_data.py"),
        ReportedTest("tests.test_data.TestData", "test_valid [hex-escape]", "tests/test_data.py"),
        ReportedTest("tests.test_data.TestData", "test_sizes (i=1)", "tests/test_data.py"),
    ]
    collected = ["tests/test_data.py::TestData::test_valid", "tests/test_data.py::TestData::test_sizes"]

    resolution = resolve_reported(cases, collected)

    assert resolution.nodeids == tuple(collected) and not resolution.unresolved
