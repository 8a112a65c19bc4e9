"""A test module that does not import on the checkout (a name the tests need is missing from the code) is a
failure CI reports as one collection error: pytest stops before any test runs, and its JUnit report holds one
case, named by the module. Before: selfix found no suspect (nothing ran, no project frame), guarded no passing
test (the baseline was interrupted too), and a report naming the module's tests one by one (the developers' new
tests, a CI run where the module still imported) resolved to nothing here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.heal.pipeline import failure_sets
from selfix_action.repair.localize import localize
from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason
from selfix_action.repair.reported import ReportedTest, resolve_reported
from selfix_action.repair.values import Hypothesis, TestResult, TestRun, TestStatus
from selfix_action.repair.verify import not_passing
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import write_project
from tests.helpers.scripted_engine import ScriptedEngine

PROJECT = {
    "shop/__init__.py": "",
    "shop/prices.py": "def net(gross):\n    return gross / 1.2\n\n\ndef rounded(value):\n    return round(value, 2)\n",
    "tests/__init__.py": "",
    "tests/test_net.py": "from shop.prices import net\n\n\ndef test_net():\n    assert net(12) == 10\n",
    "tests/test_vat.py": (
        "from shop.prices import net, vat\n\n\n"
        "def test_vat():\n    assert vat(12) == 2\n\n\n"
        "def test_vat_and_net_sum_up():\n    assert vat(12) + net(12) == 12\n"
    ),
}
FIXED = PROJECT["shop/prices.py"] + "\n\ndef vat(gross):\n    return gross - net(gross)\n"
MODULE_ERROR = TestResult(
    nodeid="tests/test_vat.py",
    status=TestStatus.ERROR,
    exc_type="CollectionError",
    message="ImportError while importing test module\nE   ImportError: cannot import name 'vat' from "
    "'shop.prices' (/tmp/x/repo/shop/prices.py)",
)


def test_a_reported_test_whose_module_does_not_import_here_resolves_to_the_modules_collection_error() -> None:
    collected = ["tests/test_vat.py", "tests/test_net.py::test_net"]
    cases = [ReportedTest("tests.test_vat", "test_vat"), ReportedTest("tests.test_vat", "test_vat_and_net_sum_up")]
    assert resolve_reported(cases, collected).nodeids == ("tests/test_vat.py",)
    # A test of a module that did import is resolved as ever, and a module error never stands for another module.
    assert resolve_reported([ReportedTest("tests.test_net", "test_net")], collected).nodeids == (
        "tests/test_net.py::test_net",
    )
    assert resolve_reported([ReportedTest("tests.test_other", "test_x")], collected).nodeids == ()


def test_a_modules_path_passes_only_when_it_collects_and_every_test_in_it_passes() -> None:
    def run(**statuses: TestStatus) -> TestRun:
        return TestRun(
            results={
                n.replace("__", "::"): TestResult(nodeid=n.replace("__", "::"), status=s) for n, s in statuses.items()
            }
        )

    ok, bad = TestStatus.PASSED, TestStatus.FAILED
    module = ["tests/test_vat.py"]
    assert not_passing(run(**{"tests/test_vat.py__test_vat": ok, "tests/test_vat.py__test_sum": ok}), module) == []
    assert not_passing(run(**{"tests/test_vat.py__test_vat": ok, "tests/test_vat.py__test_sum": bad}), module) == module
    assert not_passing(run(**{"tests/test_vat.py": TestStatus.ERROR}), module) == module  # still fails to collect
    assert not_passing(run(**{"tests/test_vat_more.py__test_x": ok}), module) == module  # another module's tests


def test_a_module_that_failed_to_collect_points_at_the_project_module_its_error_names() -> None:
    sources = {path: text for path, text in PROJECT.items() if path.startswith("shop/")}
    found = localize([MODULE_ERROR], [], None, sources, {"tests/test_vat.py": PROJECT["tests/test_vat.py"]})
    assert {line.file for line in found.lines} == {"shop/prices.py"}
    assert [f.name for f in found.functions] == ["net", "rounded"]


@pytest.mark.slow
def test_a_ci_report_of_one_collection_error_heals_with_the_other_modules_tests_guarded(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "repo", PROJECT)
    report = tmp_path / "junit.xml"
    # The CI run: pytest interrupted at collection, its report one error case named by the module.
    ci = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=repo,
        capture_output=True,
        timeout=120,
    )
    assert ci.returncode == 2 and b"Interrupted: 1 error during collection" in ci.stdout
    failing, passing = failure_sets([report], strict=True, warn=print)
    assert [(t.classname, t.name) for t in failing] == [("", "tests.test_vat")] and passing == ()
    hypothesis = Hypothesis(
        id="H1",
        rank=1,
        title="shop.prices lacks vat",
        confidence=0.9,
        file="shop/prices.py",
        symbol="net",
        lines=(1, 2),
    )
    engine = ScriptedEngine([hypothesis], {"H1": None}, {"H1": [{"shop/prices.py": FIXED}]})
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], scratch_parent=tmp_path) as sandbox:
        result = HealingLoop(sandbox, engine).run(failing, passing)
        overrides = sandbox.config_overrides
    report_ = result.report
    assert report_.stop_reason is StopReason.HEALED, report_.notes
    assert report_.f2p_tests == ("tests/test_vat.py",)
    assert "tests/test_net.py::test_net" in report_.p2p_tests  # the rest of the suite ran, and guards the fix
    assert report_.patch is not None and "+def vat(gross):" in report_.patch.diff
    assert any("failed to collect" in note for note in overrides)


def test_a_module_missing_a_dependency_the_project_does_not_provide_is_the_environments(tmp_path: Path) -> None:
    # CI ran the module's tests (its report names them one by one); here the interpreter lacks a package the
    # workflow installed elsewhere. No patch of the project's code is the fix: the heal stops before any engine.
    files = {
        **PROJECT,
        "tests/test_vat.py": "import yaml_not_installed_here\n\n\ndef test_vat():\n    assert True\n",
    }
    repo = write_project(tmp_path / "repo", files)
    reported = [ReportedTest("tests.test_vat", "test_vat")]
    engine = ScriptedEngine([], {}, {})
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], scratch_parent=tmp_path) as sandbox:
        report = HealingLoop(sandbox, engine).run(reported).report
    assert report.stop_reason is StopReason.ENVIRONMENT, report.notes
    assert "cannot import yaml_not_installed_here, which the project does not provide" in report.environment_problem
    assert any("install it in the workflow" in note for note in report.notes)
    assert report.patch is None


def test_a_missing_module_of_the_project_itself_is_still_a_bug_to_heal(tmp_path: Path) -> None:
    files = {**PROJECT, "tests/test_vat.py": "from shop.vat import vat\n\n\ndef test_vat():\n    assert vat(12) == 2\n"}
    repo = write_project(tmp_path / "repo", files)
    hypothesis = Hypothesis(
        id="H1",
        rank=1,
        title="shop lacks its vat module",
        confidence=0.9,
        file="shop/prices.py",
        symbol="net",
        lines=(1, 2),
    )
    vat_module = "from shop.prices import net\n\n\ndef vat(gross):\n    return gross - net(gross)\n"
    engine = ScriptedEngine([hypothesis], {"H1": None}, {"H1": [{"shop/vat.py": vat_module}]})
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], scratch_parent=tmp_path) as sandbox:
        report = HealingLoop(sandbox, engine).run([ReportedTest("tests.test_vat", "test_vat")]).report
    assert report.stop_reason is StopReason.HEALED, (report.stop_reason, report.notes)
