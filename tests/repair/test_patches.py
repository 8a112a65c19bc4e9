from __future__ import annotations

import subprocess
from pathlib import Path

from selfix_action.repair.patches import changed_line_count, hunks, program_key, unified_diff, without_hunk
from selfix_action.repair.paths import is_source_path, is_test_path, protected_reason

ORIGINAL = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\ni = 9\n"


def test_diff_applies_with_git_apply_including_missing_final_newline(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(ORIGINAL)
    (tmp_path / "n.py").write_text("x = 1")  # no final newline
    files = {"pkg/m.py": ORIGINAL.replace("b = 2", "b = 3").replace("i = 9", "i = 10"), "n.py": "x = 2"}
    diff = unified_diff({"pkg/m.py": ORIGINAL, "n.py": "x = 1"}, files)
    assert "\\ No newline at end of file" in diff
    (tmp_path / "p.diff").write_text(diff)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=30)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True, timeout=30)
    assert (tmp_path / "pkg" / "m.py").read_text() == files["pkg/m.py"]
    assert (tmp_path / "n.py").read_text() == "x = 2"


def test_hunks_and_dropping_one() -> None:
    new = ORIGINAL.replace("b = 2", "b = 3").replace("i = 9", "i = 10")
    found = hunks({"m.py": ORIGINAL}, {"m.py": new})
    assert [h.original_lines for h in found] == [(2, 2), (9, 9)]
    reduced = without_hunk({"m.py": ORIGINAL}, {"m.py": new}, found[1])
    assert reduced == {"m.py": ORIGINAL.replace("b = 2", "b = 3")}
    assert without_hunk({"m.py": ORIGINAL}, reduced, hunks({"m.py": ORIGINAL}, reduced)[0]) == {}
    assert changed_line_count({"m.py": ORIGINAL}, {"m.py": new}) == 4


def test_insertion_hunk_points_at_the_following_line() -> None:
    new = ORIGINAL.replace("c = 3\n", "c = 3\nextra = 0\n")
    (hunk,) = hunks({"m.py": ORIGINAL}, {"m.py": new})
    assert hunk.original_lines == (4, 4)


def test_protected_and_test_paths() -> None:
    for path in ["tests/test_a.py", "test_a.py", "pkg/a_test.py", "conftest.py", "pkg/tests/helpers.py"]:
        assert is_test_path(path), path
        assert protected_reason(path) == "test file"
    for path in ["pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"]:
        assert protected_reason(path) == "test, build or CI configuration"
    assert protected_reason(".github/workflows/ci.yml") == "CI configuration"
    assert protected_reason(".gitlab/ci/tests.yml") == "CI configuration"  # a file .gitlab-ci.yml includes
    assert protected_reason(".gitlab-ci.yml") is not None
    assert protected_reason("../outside.py") == "outside the repository"
    assert protected_reason("/etc/passwd") == "outside the repository"
    assert protected_reason("pkg/vendor/x.py", ["pkg/vendor/*"]) == "protected by pattern 'pkg/vendor/*'"
    assert protected_reason("pkg/core.py") is None
    assert is_source_path("pkg/core.py")
    assert not is_source_path(".venv/lib/site.py")
    assert not is_source_path("pkg/readme.md")


def test_diff_that_creates_a_file_applies_with_git_apply(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(ORIGINAL)
    files = {"pkg/helpers.py": "def helper():\n    return 1\n", "pkg/m.py": ORIGINAL.replace("a = 1", "a = 2")}
    diff = unified_diff({"pkg/m.py": ORIGINAL}, files)
    assert "new file mode 100644\n--- /dev/null\n+++ b/pkg/helpers.py" in diff
    (tmp_path / "p.diff").write_text(diff)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=30)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True, timeout=30)
    assert (tmp_path / "pkg" / "helpers.py").read_text() == files["pkg/helpers.py"]


def test_program_key_ignores_formatting_and_comments_only() -> None:
    base = {"m.py": "x = 1 + 2\n"}
    assert program_key(base) == program_key({"m.py": "x = (1 + 2)  # same program\n"})
    assert program_key(base) != program_key({"m.py": "x = 1 - 2\n"})
    assert program_key(base) != program_key({"n.py": "x = 1 + 2\n"})  # the path is part of it
    assert program_key({"m.py": "def f(:\n"}) != program_key({"m.py": "def f( :\n"})  # unparsable: by text


def test_a_line_separator_inside_a_line_is_no_line_end() -> None:
    """ESLint's sources hold U+2028 in string literals: a diff of such a file applies, and hunks count lines by
    newlines alone (str.splitlines would cut there, and every later line number would be off by one)."""
    from selfix_action.repair.patches import apply_unified_diff, hunks, text_lines, unified_diff

    before = "const a = '\u2028';\nconst b = 1;\n"
    after = before.replace("= 1", "= 2")
    assert text_lines(before) == ["const a = '\u2028';\n", "const b = 1;\n"]
    diff = unified_diff({"lib/a.js": before}, {"lib/a.js": after})
    assert apply_unified_diff(diff, {"lib/a.js": before}.get) == {"lib/a.js": after}
    assert [h.original_lines for h in hunks({"lib/a.js": before}, {"lib/a.js": after})] == [(2, 2)]
