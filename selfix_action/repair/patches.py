"""Patches as whole-file replacements, their unified diffs, and the hunks minimization can drop."""

from __future__ import annotations

import ast
import difflib
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(originals: Mapping[str, str], files: Mapping[str, str]) -> str:
    """A ``git apply``-compatible diff from original to new file texts (paths repo-relative)."""
    chunks = []
    for path in sorted(files):
        before = originals.get(path, "")
        after = files[path]
        if before == after:
            continue
        lines = difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}" if path in originals else "/dev/null",
            tofile=f"b/{path}",
            n=3,
        )
        text = f"diff --git a/{path} b/{path}\n"
        if path not in originals:
            text += "new file mode 100644\n"  # git apply needs it to create the file
        for line in lines:
            text += line if line.endswith("\n") else line + "\n" + NO_NEWLINE
        chunks.append(text)
    return "".join(chunks)


@dataclass(frozen=True)
class Hunk:
    path: str
    index: int  # position among this file's hunks
    original_lines: tuple[int, int]  # 1-based [start, end] lines of the original that the hunk replaces


def hunks(originals: Mapping[str, str], files: Mapping[str, str]) -> list[Hunk]:
    """Each contiguous changed region of each file."""
    found = []
    for path in sorted(files):
        before = originals.get(path, "").splitlines(keepends=True)
        after = files[path].splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
        changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        for index, (_tag, i1, i2, _j1, _j2) in enumerate(changed):
            found.append(Hunk(path, index, (i1 + 1, max(i1 + 1, i2))))
    return found


def without_hunk(originals: Mapping[str, str], files: Mapping[str, str], hunk: Hunk) -> dict[str, str]:
    """The patch with one hunk reverted to the original text."""
    before = originals.get(hunk.path, "").splitlines(keepends=True)
    after = files[hunk.path].splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    out: list[str] = []
    changed_index = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(after[j1:j2])
            continue
        out.extend(before[i1:i2] if changed_index == hunk.index else after[j1:j2])
        changed_index += 1
    reduced = dict(files)
    text = "".join(out)
    if text == originals.get(hunk.path):
        del reduced[hunk.path]
    else:
        reduced[hunk.path] = text
    return reduced


def changed_line_count(originals: Mapping[str, str], files: Mapping[str, str]) -> int:
    count = 0
    for path, text in files.items():
        for line in difflib.unified_diff(originals.get(path, "").splitlines(), text.splitlines(), n=0):
            if line[:1] in "+-" and not line.startswith(("+++", "---")):
                count += 1
    return count


def program_key(files: Mapping[str, str], normalized: Mapping[str, str] | None = None) -> str:
    """Identity of a patch by the programs it produces: files compared by normalized syntax tree, so edits that
    differ only in formatting or comments are one patch (their verdicts are the same). A file that does not
    parse is compared by its text. ``normalized`` holds ``ast.dump`` texts already computed, by path."""
    digest = hashlib.sha256()
    for path in sorted(files):
        text = (normalized or {}).get(path)
        if text is None:
            try:
                text = ast.dump(ast.parse(files[path]))
            except (SyntaxError, ValueError):
                text = files[path]
        digest.update(path.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()
