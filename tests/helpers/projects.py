"""Small real projects for the tests: written from a dict of files, copied from the bundled examples, and the
JUnit report a CI run of one would produce."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"
# What the offline engine's fix of each bundled example removes and adds (examples/expected_fixes.json).
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected_fixes.json").read_text(encoding="utf-8"))

# A one-operator bug (``a - b`` for ``a + b``) with two failing tests and one passing test, and its fix.
CALC = {
    "calc.py": """
        def add(a, b):
            return a - b


        def double(x):
            return x * 2
        """,
    "tests/test_calc.py": """
        from calc import add, double


        def test_add():
            assert add(2, 3) == 5


        def test_add_zero():
            assert add(4, 0) == 4


        def test_double():
            assert double(4) == 8
        """,
}
FIXED = "def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return x * 2\n"


def write_project(root: Path, files: dict[str, str]) -> Path:
    """``files`` (relative path -> text, dedented) written under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def copy_example(name: str, dest: Path, *, git: bool = False) -> Path:
    """A copy of ``examples/<name>`` in ``dest`` (without caches), optionally a git repository of one commit."""
    repo = dest / name
    shutil.copytree(EXAMPLES / name, repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix", ".pytest_cache"))
    if git:
        for argv in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
        ):
            subprocess.run(["git", *argv], cwd=repo, check=True, timeout=60)
    return repo


def junit_report(repo: Path, report: Path) -> Path:
    """The JUnit report a CI run of the project's suite would have produced."""
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=repo,
        capture_output=True,
        timeout=120,
    )
    return report


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    """The removed and the added lines of a unified diff, stripped."""
    removed = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return removed, added
