"""A test that the CI report says passed but that fails in the sandbox is the sandbox's failure: reported as such
(report.json, report.md: its name and the failure seen here), never a failing test to heal nor a passing test to
guard, and when nothing else is left to heal the stop reason says why.

The CI run is real: pytest writes the JUnit report in an environment with a deploy token, which the sandbox never
passes on (a secret-looking name), so the test that needs it passes in CI and fails in the sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.heal.pipeline import heal
from selfix_action.heal.request import HealRequest
from selfix_action.repair.report import ExitCode, StopReason
from tests.helpers.projects import write_project

PROJECT = {
    "calc.py": """
        def add(a, b):
            return a - b


        def double(x):
            return x * 2
        """,
    "tests/test_calc.py": """
        import os

        from calc import add, double


        def test_add():
            assert add(2, 3) == 5


        def test_double():
            assert double(4) == 8


        def test_deploys_with_the_ci_token():
            assert os.environ.get("DEPLOY_TOKEN"), "DEPLOY_TOKEN is not set"
            assert double(1) == 2
        """,
}
SANDBOX_ONLY = "tests/test_calc.py::test_deploys_with_the_ci_token"


def _ci_report(repo: Path, out: Path, **env: str) -> Path:
    """Run the suite as CI did (with its token) and keep pytest's own JUnit report."""
    report = out / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=repo,
        env={"PATH": os.environ["PATH"], "DEPLOY_TOKEN": "ci-secret", **env},
        capture_output=True,
        timeout=120,
        check=False,
    )
    return report


def _heal(repo: Path, junit: Path) -> tuple[dict, str]:  # type: ignore[type-arg]
    request = HealRequest(
        repo=repo, test_cmd=(sys.executable, "-m", "pytest"), out_dir=repo / ".selfix", junit=(junit,)
    )
    outcome = heal(request)
    assert outcome.paths is not None
    report = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    return report, (repo / ".selfix" / "report.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_ci_pass_that_fails_here_is_reported_and_left_out(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "repo", PROJECT)
    report, markdown = _heal(repo, _ci_report(repo, tmp_path))
    assert report["stop_reason"] == StopReason.HEALED.value  # the real bug is still healed
    assert report["f2p_tests"] == ["tests/test_calc.py::test_add"]
    assert SANDBOX_ONLY not in report["p2p_tests"] and "tests/test_calc.py::test_double" in report["p2p_tests"]
    [failure] = report["sandbox_failures"]
    assert failure["nodeid"] == SANDBOX_ONLY and failure["status"] == "failed"
    assert failure["exc_type"] == "AssertionError" and "DEPLOY_TOKEN is not set" in failure["message"]
    assert "Passed in CI but failed in the sandbox" in markdown and SANDBOX_ONLY in markdown
    assert "DEPLOY_TOKEN is not set" in markdown


def test_when_only_the_sandbox_failures_are_left_the_stop_says_so(tmp_path: Path) -> None:
    files = dict(PROJECT)
    files["calc.py"] = "def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return x * 2\n"
    # CI also saw a failure that does not happen here (it needed CI's environment): not reproducible.
    files["tests/test_ci_only.py"] = "import os\n\n\ndef test_ci_only():\n    assert 'CI_BROKE_IT' not in os.environ\n"
    repo = write_project(tmp_path / "repo", files)
    report, markdown = _heal(repo, _ci_report(repo, tmp_path, CI_BROKE_IT="1"))
    assert report["stop_reason"] == StopReason.ONLY_SANDBOX_FAILURES.value
    assert report["exit_code"] == ExitCode.NOTHING_TO_HEAL
    assert report["f2p_tests"] == [] and report["patch"] is None
    assert [f["nodeid"] for f in report["sandbox_failures"]] == [SANDBOX_ONLY]
    assert report["flaky_tests"] == ["tests/test_ci_only.py::test_ci_only"]
    assert "passed in the CI report, so the sandbox made them fail" in markdown
