"""``apply_to_tree``: a verified patch goes into the user's tree only if every file is as selfix found it; a file
the patch adds (a reported error's reproduction test) must still be absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.errors import InputError
from selfix_action.heal.outputs import apply_to_tree

ORIGINAL = "def f():\n    return 1\n"
FIXED = "def f():\n    return 2\n"
TEST = "from shop import f\n\n\ndef test_f():\n    assert f() == 2\n"


def test_a_patch_that_adds_a_test_file_writes_both(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(ORIGINAL)
    (tmp_path / "tests").mkdir()
    apply_to_tree(tmp_path, {"shop.py": FIXED, "tests/test_selfix_f.py": TEST}, {"shop.py": ORIGINAL})
    assert (tmp_path / "shop.py").read_text() == FIXED
    assert (tmp_path / "tests" / "test_selfix_f.py").read_text() == TEST


def test_a_file_the_patch_adds_that_appeared_meanwhile_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(ORIGINAL)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_selfix_f.py").write_text("# the user's own\n")
    with pytest.raises(InputError, match="appeared while selfix was working"):
        apply_to_tree(tmp_path, {"shop.py": FIXED, "tests/test_selfix_f.py": TEST}, {"shop.py": ORIGINAL})
    assert (tmp_path / "shop.py").read_text() == ORIGINAL  # nothing written: checked before any write
    assert (tmp_path / "tests" / "test_selfix_f.py").read_text() == "# the user's own\n"
