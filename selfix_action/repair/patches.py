"""Patches as whole-file replacements, their unified diffs, and the hunks minimization can drop."""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from selfix_action.repair.languages import normalized_syntax

NO_NEWLINE = "\\ No newline at end of file\n"


def text_lines(text: str) -> list[str]:
    """``text``'s lines with their ends, a line ended by "\n" alone: JavaScript source may hold U+2028 (ESLint
    titles tests by their code), where ``str.splitlines`` would also cut, and both languages' parsers number lines
    by newlines."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    return lines


def unified_diff(originals: Mapping[str, str], files: Mapping[str, str]) -> str:
    """A ``git apply``-compatible diff from original to new file texts (paths repo-relative)."""
    chunks = []
    for path in sorted(files):
        before = originals.get(path, "")
        after = files[path]
        if before == after:
            continue
        lines = difflib.unified_diff(
            text_lines(before),
            text_lines(after),
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
        before = text_lines(originals.get(path, ""))
        after = text_lines(files[path])
        matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
        changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        for index, (_tag, i1, i2, _j1, _j2) in enumerate(changed):
            found.append(Hunk(path, index, (i1 + 1, max(i1 + 1, i2))))
    return found


def without_hunk(originals: Mapping[str, str], files: Mapping[str, str], hunk: Hunk) -> dict[str, str]:
    """The patch with one hunk reverted to the original text."""
    before = text_lines(originals.get(hunk.path, ""))
    after = text_lines(files[hunk.path])
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
        for line in difflib.unified_diff(text_lines(originals.get(path, "")), text_lines(text), n=0):
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
            text = normalized_syntax(path, files[path]) or files[path]
        digest.update(path.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


class DiffError(ValueError):
    """A unified diff that cannot be read, or does not apply to the files it names."""


_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _diff_path(header: str) -> str | None:
    """The repo-relative path of a ``---``/``+++`` line (``a/``/``b/`` dropped), None for /dev/null."""
    name = header[4:].split("\t", 1)[0].rstrip("\n").strip()
    if name == "/dev/null":
        return None
    if name.startswith(('"', "'")):
        raise DiffError(f"quoted path names are not supported: {name}")
    return name[2:] if name[:2] in ("a/", "b/") else name


def apply_unified_diff(diff: str, read: Callable[[str], str | None]) -> dict[str, str]:
    """The whole new texts of the files a unified diff (``git diff`` or ``diff -u``) changes, from ``read(path)``
    (the current text, None for a file that does not exist). Every context and removed line must match exactly:
    a diff that does not apply raises ``DiffError``, and nothing is written anywhere. Deleting or renaming a
    file is refused (a patch here only edits or adds text files)."""
    lines = text_lines(diff)
    files: dict[str, str] = {}
    index = 0
    seen_hunk = False
    while index < len(lines):
        line = lines[index]
        if not line.startswith("--- ") or index + 1 >= len(lines) or not lines[index + 1].startswith("+++ "):
            if line.startswith(("rename from", "rename to", "deleted file mode", "Binary files", "GIT binary patch")):
                raise DiffError(f"only edits and new text files are supported, not: {line.strip()}")
            index += 1
            continue
        old_path, new_path = _diff_path(line), _diff_path(lines[index + 1])
        index += 2
        if new_path is None:
            raise DiffError(f"the diff deletes {old_path}: only edits and new text files are supported")
        if old_path is not None and old_path != new_path:
            raise DiffError(f"the diff renames {old_path} to {new_path}: only edits and new text files are supported")
        if new_path in files:
            current: str | None = files[new_path]
        else:
            current = read(new_path) if old_path is not None else None
            if old_path is not None and current is None:
                raise DiffError(f"the diff edits {new_path}, which does not exist")
            if old_path is None and read(new_path) is not None:
                raise DiffError(f"the diff creates {new_path}, which exists already")
        source = text_lines(current or "")
        out: list[str] = []
        position = 0  # next line of ``source`` not yet copied
        while index < len(lines) and lines[index].startswith("@@"):
            match = _HUNK_HEADER.match(lines[index])
            if match is None:
                raise DiffError(f"malformed hunk header in {new_path}: {lines[index].strip()}")
            seen_hunk = True
            start = int(match.group(1))
            old_count = int(match.group(2)) if match.group(2) is not None else 1
            new_count = int(match.group(4)) if match.group(4) is not None else 1
            begin = start - 1 if old_count else start  # "-0,0": insert before line 1; "-5,0": after line 5
            if begin < position or begin > len(source):
                raise DiffError(f"hunk at line {start} of {new_path} does not apply: the file has {len(source)} lines")
            out.extend(source[position:begin])
            position = begin
            index += 1
            old_seen = new_seen = 0
            while index < len(lines) and (old_seen < old_count or new_seen < new_count):
                body = lines[index]
                tag, text = body[:1], body[1:]
                if body.startswith("\\"):
                    index += 1
                    continue
                if tag in (" ", "-"):
                    expected = source[position] if position < len(source) else None
                    if expected is None or expected.rstrip("\r\n") != text.rstrip("\r\n"):
                        raise DiffError(
                            f"hunk at line {start} of {new_path} does not apply: line {position + 1} is "
                            f"{(expected or '<end of file>').rstrip()!r}, the diff expects {text.rstrip()!r}"
                        )
                    if tag == " ":
                        out.append(expected)
                        new_seen += 1
                    position += 1
                    old_seen += 1
                elif tag == "+":
                    out.append(text)
                    new_seen += 1
                elif body in ("\n", "\r\n") and (old_seen < old_count and new_seen < new_count):
                    # An empty context line whose leading space an editor stripped.
                    expected = source[position] if position < len(source) else None
                    if expected is None or expected.strip():
                        raise DiffError(f"hunk at line {start} of {new_path} does not apply at line {position + 1}")
                    out.append(expected)
                    position += 1
                    old_seen += 1
                    new_seen += 1
                else:
                    raise DiffError(f"malformed line in the hunk at line {start} of {new_path}: {body.rstrip()!r}")
                index += 1
                if index < len(lines) and lines[index].startswith("\\"):  # "\ No newline at end of file"
                    if out and tag in (" ", "+") and out[-1].endswith("\n"):
                        out[-1] = out[-1].rstrip("\r\n")
                    index += 1
            if old_seen != old_count or new_seen != new_count:
                raise DiffError(f"the hunk at line {start} of {new_path} is cut short")
        out.extend(source[position:])
        files[new_path] = "".join(out)
    if not seen_hunk:
        raise DiffError("not a unified diff: no file with a hunk (--- a/PATH, +++ b/PATH, @@ ... @@)")
    return files
