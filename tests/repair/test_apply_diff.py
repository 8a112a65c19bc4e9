"""``apply_unified_diff``: a unified diff read back into whole new file texts, exactly or not at all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from selfix_action.repair.patches import DiffError, apply_unified_diff, unified_diff

ORIGINAL = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\ni = 9\n"


@pytest.mark.parametrize(
    "new",
    [
        {"m.py": ORIGINAL.replace("b = 2", "b = 3").replace("i = 9", "i = 10")},  # two hunks
        {"m.py": "top = 0\n" + ORIGINAL},  # inserted before line 1
        {"m.py": ORIGINAL + "j = 10\n"},  # appended
        {"m.py": ORIGINAL.rstrip("\n")},  # the final newline removed
        {"m.py": ORIGINAL, "n.py": "x = 2"},  # an edit of a file without a final newline
        {"pkg/new.py": "created = True\n"},  # a new file
    ],
)
def test_what_unified_diff_writes_applies_back(new: dict[str, str]) -> None:
    originals = {"m.py": ORIGINAL, "n.py": "x = 1"}
    diff = unified_diff(originals, new)
    changed = {path: text for path, text in new.items() if originals.get(path) != text}
    assert apply_unified_diff(diff, originals.get) == changed


def test_a_diff_from_git_applies(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(ORIGINAL)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=30)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True, timeout=30)
    (tmp_path / "m.py").write_text(ORIGINAL.replace("e = 5", "e = 55"))
    diff = subprocess.run(["git", "diff"], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=30).stdout
    assert apply_unified_diff(diff, {"m.py": ORIGINAL}.get) == {"m.py": ORIGINAL.replace("e = 5", "e = 55")}


def test_context_that_does_not_match_is_refused() -> None:
    diff = unified_diff({"m.py": ORIGINAL}, {"m.py": ORIGINAL.replace("e = 5", "e = 55")})
    with pytest.raises(DiffError, match=r"line 4 is 'D = 4', the diff expects 'd = 4'"):
        apply_unified_diff(diff, {"m.py": ORIGINAL.replace("d = 4", "D = 4")}.get)


@pytest.mark.parametrize(
    ("diff", "files", "error"),
    [
        ("just text\n", {}, "not a unified diff"),
        ("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n", {"m.py": ORIGINAL}, "cut short"),
        ("--- a/gone.py\n+++ b/gone.py\n@@ -1 +1 @@\n-a\n+b\n", {}, "does not exist"),
        ("--- /dev/null\n+++ b/m.py\n@@ -0,0 +1 @@\n+a\n", {"m.py": ORIGINAL}, "exists already"),
        ("--- a/m.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a = 1\n", {"m.py": "a = 1\n"}, "deletes m.py"),
        ("--- a/m.py\n+++ b/o.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n", {"m.py": "a = 1\n"}, "renames m.py"),
        ("--- a/m.py\n+++ b/m.py\n@@ -40 +40 @@\n-a = 1\n+a = 2\n", {"m.py": ORIGINAL}, "the file has 9 lines"),
        ("--- a/m.py\n+++ b/m.py\n@@ bad @@\n", {"m.py": ORIGINAL}, "malformed hunk header"),
    ],
)
def test_diffs_that_cannot_apply_are_refused(diff: str, files: dict[str, str], error: str) -> None:
    with pytest.raises(DiffError, match=error):
        apply_unified_diff(diff, files.get)
