"""bench.differential: the same tests outside any sandbox and inside selfix's, compared per test. A test that
reads the caller's own home differs (the sandbox gives every run a home of its own, as a CI job has); one that
only computes does not."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from selfix_bench.differential import differences, inside, outside
from tests.helpers.projects import write_project


def test_a_test_that_reads_the_callers_home_differs_inside_the_sandbox(tmp_path: Path) -> None:
    home = os.environ.get("HOME", "/")
    repo = write_project(
        tmp_path / "p",
        {
            "tests/test_env.py": "import os\n\n\ndef test_adds():\n    assert 1 + 1 == 2\n\n\n"
            f"def test_home_is_the_callers():\n    assert os.path.expanduser('~') == {home!r}\n",
        },
    )
    command = [sys.executable, "-m", "pytest"]
    reference = outside(repo, command, tmp_path)
    assert reference["tests/test_env.py::test_home_is_the_callers"]["status"] == "passed"
    ran = inside(repo, command, "none")
    found = differences(reference, ran)
    assert [d["test"] for d in found] == ["tests/test_env.py::test_home_is_the_callers"]
    assert found[0]["outside"] == "passed" and found[0]["inside"] == "failed"
