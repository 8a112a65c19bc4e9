"""Search/replace edits from the Patcher, applied to whole files.

Each edit's search text must match the current file exactly once. On no match or several matches the model
gets back why, with the most similar region of the file (difflib), so its next try can copy the text exactly.
Edits to tests, test configuration and CI files are refused, like unknown files and edits that do not parse.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from selfix_action.repair.languages import syntax_problem
from selfix_action.repair.paths import protected_reason

# "  12 | code": the numbering we show in prompts, which models sometimes copy into their search text.
_NUMBERED = re.compile(r"^\s*\d+ \| ?")
CONTEXT_LINES = 2


@dataclass(frozen=True)
class Edit:
    file: str
    search: str
    replace: str


class EditError(Exception):
    """An edit that cannot be applied; the message is written for the model to act on."""


def normalize_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def apply_edits(
    edits: Sequence[Edit],
    read_file: Callable[[str], str],
    editable: Collection[str],
    protected_patterns: Iterable[str] = (),
) -> dict[str, str]:
    """Whole new texts of the edited files. Raises ``EditError`` listing every problem found."""
    patterns = tuple(protected_patterns)
    texts: dict[str, str] = {}
    originals: dict[str, str] = {}
    problems: list[str] = []
    for number, edit in enumerate(edits, 1):
        path = normalize_path(edit.file)
        label = f"edit {number} ({path})"
        reason = protected_reason(path, patterns)
        if reason is not None:
            problems.append(
                f"{label}: refused, {path} is a {reason}. Tests and their configuration are the "
                "specification: fix the project's source code instead."
                if reason != "outside the repository"
                else f"{label}: refused, the path is outside the repository"
            )
            continue
        if path not in editable:
            close = difflib.get_close_matches(path, list(editable), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            problems.append(f"{label}: unknown file; only the project's source files can be edited.{hint}")
            continue
        if path not in texts:
            originals[path] = texts[path] = read_file(path)
        try:
            texts[path] = replace_once(texts[path], edit.search, edit.replace)
        except EditError as exc:
            problems.append(f"{label}: {exc}")
    if problems:
        raise EditError("\n".join(problems))
    changed = {path: text for path, text in texts.items() if text != originals[path]}
    if not changed:
        raise EditError("the edits change nothing: the replacement text equals the search text")
    for path, text in changed.items():
        if (problem := syntax_problem(path, text)) is not None:
            raise EditError(
                f"after the edits {path} no longer parses: {problem}. Check indentation and brackets in the "
                "replacement."
            )
    return changed


def replace_once(text: str, search: str, replace: str) -> str:
    """``text`` with the single occurrence of ``search`` replaced; ``EditError`` with feedback otherwise."""
    if not search.strip():
        raise EditError("the search text is empty")
    count = text.count(search)
    if count == 0:
        unnumbered = _strip_numbers(search)
        if unnumbered is not None and text.count(unnumbered) == 1:
            stripped_replace = _strip_numbers(replace)
            return text.replace(unnumbered, replace if stripped_replace is None else stripped_replace, 1)
        trimmed = search.strip("\n")
        if trimmed != search and text.count(trimmed) == 1:
            return text.replace(trimmed, replace.strip("\n"), 1)
        raise EditError(f"the search text was not found.{did_you_mean(text, search)}")
    if count > 1:
        lines = _match_lines(text, search)
        raise EditError(
            f"the search text matches {count} places (lines {', '.join(map(str, lines))}); include more "
            "surrounding lines so that it matches exactly one"
        )
    return text.replace(search, replace, 1)


def did_you_mean(text: str, search: str) -> str:
    """The region of ``text`` most similar to ``search``, numbered, for the model to copy exactly."""
    lines = text.splitlines()
    wanted = search.strip("\n").splitlines() or [search]
    size = len(wanted)
    if not lines:
        return " The file is empty."
    target = "\n".join(line.strip() for line in wanted)
    best_ratio, best_start = 0.0, 0
    for start in range(max(1, len(lines) - size + 1)):
        window = "\n".join(line.strip() for line in lines[start : start + size])
        matcher = difflib.SequenceMatcher(None, target, window, autojunk=False)
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_start = ratio, start
    if best_ratio < 0.5:
        return " Nothing in the file resembles it; copy the text exactly from the code shown."
    lo = max(0, best_start - CONTEXT_LINES)
    hi = min(len(lines), best_start + size + CONTEXT_LINES)
    region = "\n".join(f"{n + 1:>5} | {lines[n]}" for n in range(lo, hi))
    return (
        f" Did you mean this region (lines {best_start + 1}-{best_start + size}, {best_ratio:.0%} similar)? "
        f"Copy it exactly, without the line numbers, whitespace included:\n{region}"
    )


def _strip_numbers(block: str) -> str | None:
    """``block`` without "  12 | " prefixes if every non-empty line has one, else None."""
    lines = block.splitlines(keepends=True)
    if not lines or not all(_NUMBERED.match(line) for line in lines if line.strip()):
        return None
    return "".join(_NUMBERED.sub("", line, count=1) for line in lines)


def _match_lines(text: str, search: str) -> list[int]:
    found, start = [], 0
    while (index := text.find(search, start)) != -1:
        found.append(text.count("\n", 0, index) + 1)
        start = index + 1
    return found
