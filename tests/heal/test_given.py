"""``heal.given``: a given patch read against the repository and verified through ``heal()`` with the
``GivenPatch`` engine (its QA test, when given, is the reproduction test)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from selfix_action.errors import InputError
from selfix_action.heal import HealRequest
from selfix_action.heal.given import patch_files, verify_patch
from selfix_action.repair.loop import LoopConfig
from selfix_action.sandbox.process import Limits
from tests.helpers.mcp_session import EDITS_A_TEST, RIGHT_FIX
from tests.helpers.projects import copy_example

QA_EXPOSES = "from range_sum import sum_to\n\n\ndef test_sum_to_three():\n    assert sum_to(3) == 6\n"
QA_PASSES_ANYWAY = "from range_sum import sum_range\n\n\ndef test_empty():\n    assert sum_range(2, 2) == 0\n"


def _request(repo: Path, out: Path) -> HealRequest:
    return HealRequest(
        repo=repo,
        test_cmd=(sys.executable, "-m", "pytest"),
        out_dir=out,
        loop=LoopConfig(time_limit_seconds=300),
        limits=Limits(wall_seconds=60),
        jobs=1,
    )


def test_patch_files_reads_the_diff_against_the_repository(tmp_path: Path) -> None:
    repo = copy_example("range_sum", tmp_path)
    files, originals = patch_files(_request(repo, tmp_path / "out"), RIGHT_FIX)
    assert list(files) == ["range_sum.py"] and "range(1, n + 1)" in files["range_sum.py"]
    assert originals == {"range_sum.py": (repo / "range_sum.py").read_text(encoding="utf-8")}


@pytest.mark.parametrize(
    ("diff", "error"),
    [
        (EDITS_A_TEST, r"tests/test_range_sum.py \(test file\)"),
        ("--- a/pyproject.toml\n+++ b/pyproject.toml\n@@ -1 +1 @@\n-x\n+y\n", "does not apply"),
        ("--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+x = 1\n", r"conftest.py \(test file\)"),
        ("--- /dev/null\n+++ b/../escape.py\n@@ -0,0 +1 @@\n+x = 1\n", "outside the repository"),
        ("--- /dev/null\n+++ b/link/escape.py\n@@ -0,0 +1 @@\n+x = 1\n", "through a symbolic link"),
        (RIGHT_FIX.replace("+    for i in range(1, n + 1):", "+    for i in range(1, n):"), "changes nothing"),
    ],
)
def test_patch_files_refuses(tmp_path: Path, diff: str, error: str) -> None:
    repo = copy_example("range_sum", tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (repo / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match=error):
        patch_files(_request(repo, tmp_path / "out"), diff)


@pytest.mark.slow
def test_a_qa_test_that_fails_without_the_patch_is_its_reproduction(tmp_path: Path) -> None:
    repo = copy_example("range_sum", tmp_path)
    outcome = verify_patch(_request(repo, tmp_path / "out"), RIGHT_FIX, qa_source=QA_EXPOSES)
    assert outcome.healed, outcome.report.explanation
    (record,) = outcome.report.hypotheses
    assert record.exposed and "QA test" in record.exposure, record.exposure
    assert outcome.report.engine == "given"


@pytest.mark.slow
def test_a_qa_test_that_passes_without_the_patch_rejects_it(tmp_path: Path) -> None:
    repo = copy_example("range_sum", tmp_path)
    outcome = verify_patch(_request(repo, tmp_path / "out"), RIGHT_FIX, qa_source=QA_PASSES_ANYWAY)
    assert not outcome.healed and outcome.result.files is None
    (record,) = outcome.report.hypotheses
    assert not record.exposed and record.outcome == "dropped: not exposed", record
