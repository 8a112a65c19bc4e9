"""Text-span helpers for format-preserving AST edits.

`ast` reports columns as UTF-8 *byte* offsets within a line, while Python strings index by code
point; everything here converts to absolute `str` offsets so an edit touches exactly the node's
characters and leaves the rest of the file (comments, spacing, CRLF endings) byte-identical.
"""

from __future__ import annotations

import ast
import re
import warnings
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

# The tokenizer treats "\r\n", "\r" and "\n" as line breaks (not "\f" or "\v", unlike
# str.splitlines), so line numbers must be counted the same way.
NEWLINE_RE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class TextEdit:
    """Replace source[start:end] (absolute str offsets) with `text`."""

    start: int
    end: int
    text: str


class LineMap:
    """Maps (line, byte column) positions from `ast` to absolute offsets in `source`."""

    def __init__(self, source: str) -> None:
        self.source = source
        starts = [0]
        ends: list[int] = []
        for match in NEWLINE_RE.finditer(source):
            ends.append(match.start())
            starts.append(match.end())
        ends.append(len(source))
        self._starts = starts
        self._ends = ends
        first = NEWLINE_RE.search(source)
        # New lines we insert use the file's own convention so CRLF files stay CRLF.
        self.newline = first.group() if first else "\n"

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_start(self, lineno: int) -> int:
        return self._starts[lineno - 1]

    def line_end(self, lineno: int) -> int:
        """Offset of the end of the line's text, before its line break."""
        return self._ends[lineno - 1]

    def next_line_start(self, lineno: int) -> int:
        """Offset just after the line's line break (len(source) on the last line)."""
        if lineno < len(self._starts):
            return self._starts[lineno]
        return len(self.source)

    def line_text(self, lineno: int) -> str:
        return self.source[self._starts[lineno - 1] : self._ends[lineno - 1]]

    def has_line_break(self, lineno: int) -> bool:
        return lineno < len(self._starts)

    def indent_of(self, lineno: int) -> str:
        text = self.line_text(lineno)
        return text[: len(text) - len(text.lstrip(" \t\f"))]

    def offset(self, lineno: int, col_bytes: int) -> int:
        start = self._starts[lineno - 1]
        text = self.source[start : self._ends[lineno - 1]]
        if text.isascii():
            return start + col_bytes
        # Columns always fall on a character boundary, so decoding the byte prefix is exact.
        return start + len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="replace"))

    def line_of(self, offset: int) -> int:
        return bisect_right(self._starts, offset)

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def starts_line(self, offset: int) -> bool:
        """True when only indentation precedes `offset` on its line."""
        line_start = self._starts[self.line_of(offset) - 1]
        return not self.source[line_start:offset].strip(" \t\f")

    def ends_line(self, offset: int) -> bool:
        """True when only whitespace or a comment follows `offset` on its line."""
        rest = self.source[offset : self._ends[self.line_of(offset) - 1]].strip(" \t\f")
        return not rest or rest.startswith("#")


def apply_edits(source: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits; raises ValueError when two edits overlap."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    pieces: list[str] = []
    cursor = 0
    for edit in ordered:
        if edit.start < cursor:
            raise ValueError("overlapping edits")
        pieces.append(source[cursor : edit.start])
        pieces.append(edit.text)
        cursor = edit.end
    pieces.append(source[cursor:])
    return "".join(pieces)


def change_size(source: str, edits: Sequence[TextEdit]) -> int:
    """Characters removed plus inserted, ignoring the common prefix/suffix of each edit."""
    total = 0
    for edit in edits:
        old, new = source[edit.start : edit.end], edit.text
        prefix = 0
        while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
            prefix += 1
        old, new = old[prefix:], new[prefix:]
        suffix = 0
        while suffix < min(len(old), len(new)) and old[-1 - suffix] == new[-1 - suffix]:
            suffix += 1
        total += len(old) - suffix + len(new) - suffix
    return total


def line_breaks(text: str) -> int:
    return len(NEWLINE_RE.findall(text))


def operator_span(source: str, start: int, end: int) -> tuple[int, int] | None:
    """Locate the operator token(s) in the gap between two operands.

    The gap may hold whitespace, parentheses closing/opening the operands, line continuations
    and comments; whatever else is there is the operator (possibly two words: `is not`).
    """
    first: int | None = None
    last = start
    i = start
    while i < end:
        char = source[i]
        if char == "#":
            while i < end and source[i] not in "\r\n":
                i += 1
        elif char in " \t\f\r\n()":
            i += 1
        elif char == "\\" and i + 1 < end and source[i + 1] in "\r\n":
            i += 2
        else:
            if first is None:
                first = i
            i += 1
            last = i
    if first is None:
        return None
    return first, last


def shorten(text: str, limit: int = 80) -> str:
    """One-line, bounded rendering of a source fragment for human-readable descriptions."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# Nodes that can hold statements: only these are composed field by field; everything below a
# statement is an expression tree, cheap enough for plain ast.dump.
_BLOCK_TYPES = (ast.mod, ast.stmt, ast.excepthandler, ast.match_case)


def compose_dump(node: ast.AST, child: Callable[[ast.AST], str]) -> str:
    """One level of `ast.dump(node)` (default arguments), delegating AST children to `child`.

    Mirrors the stdlib formatter: `Name(field=value, ...)`, omitting absent fields and optional
    fields left at None. `IncrementalDump` checks the result against ast.dump before trusting it.
    """
    cls = type(node)
    parts: list[str] = []
    for name in node._fields:
        try:
            value = getattr(node, name)
        except AttributeError:
            continue
        if value is None and getattr(cls, name, ...) is None:
            continue
        if isinstance(value, ast.AST):
            parts.append(f"{name}={child(value)}")
        elif isinstance(value, list):
            items = ", ".join(child(v) if isinstance(v, ast.AST) else repr(v) for v in value)
            parts.append(f"{name}=[{items}]")
        else:
            parts.append(f"{name}={value!r}")
    return f"{cls.__name__}({', '.join(parts)})"


def _first_line(node: ast.AST) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])  # type: ignore[attr-defined]


class IncrementalDump:
    """`ast.dump` of slightly edited trees without re-dumping the unchanged statements.

    Candidate verification dumps two trees per candidate (the intended mutated tree and the
    re-parsed edited text); on a long function that dominates the run time. Unchanged statements
    reuse the original's dump: in the mutated tree, anything off the path to the mutation; in
    the re-parsed tree, any statement whose text lies wholly outside the edited region at the
    same (line-shifted) position, since a statement's AST is determined by its text.
    """

    def __init__(self, tree: ast.Module, lines: LineMap) -> None:
        self.tree = tree
        self.lines = lines
        self._memo: dict[int, str] = {}
        self._original_ids = {id(node) for node in ast.walk(tree)}
        self._by_place: dict[tuple[type, int, int, int, int], ast.stmt] = {
            _place(node, 0): node for node in ast.walk(tree) if isinstance(node, ast.stmt)
        }
        self.original = ast.dump(tree)
        # Guard against a future ast.dump format change: fall back to plain dumps.
        self.enabled = self._dump_original(tree) == self.original

    def _dump_original(self, node: ast.AST) -> str:
        key = id(node)
        cached = self._memo.get(key)
        if cached is None:
            cached = compose_dump(node, self._dump_original) if isinstance(node, _BLOCK_TYPES) else ast.dump(node)
            self._memo[key] = cached
        return cached

    def mutated(self, dirty: set[int]) -> str:
        """Dump of `tree` as currently (temporarily) mutated; `dirty` holds the ids of every
        original node whose own fields changed, plus all their ancestors."""
        if not self.enabled:
            return ast.dump(self.tree)

        def walk(node: ast.AST) -> str:
            key = id(node)
            if key in self._original_ids and key not in dirty:
                return self._dump_original(node)
            return compose_dump(node, walk)

        return walk(self.tree)

    def render(self, edits: Sequence[TextEdit]) -> tuple[str, str] | None:
        """Apply `edits`; return (new source, ast.dump of its parse), or None if it does not parse.

        When every edit falls inside one top-level statement that has its lines to itself, only
        that statement's text is re-parsed: a top-level statement starts at column 0 and ends
        at a line break, so the file parses as the untouched statements around the re-parsed
        ones, whose dumps are then spliced between the original neighbours' dumps.
        """
        try:
            new_source = apply_edits(self.lines.source, edits)
        except ValueError:
            return None
        region = self._region(edits) if self.enabled else None
        if region is None:
            new_tree = _parse(new_source)
            if new_tree is None:
                return None
            return new_source, self._dump_edited(new_tree, edits, 0)
        index, region_start, region_end = region
        shifted = [TextEdit(e.start - region_start, e.end - region_start, e.text) for e in edits]
        new_region = _parse(apply_edits(self.lines.source[region_start:region_end], shifted))
        if new_region is None:
            return None
        body = self.tree.body
        middle = self._dump_edited(new_region, edits, self.lines.line_of(region_start) - 1)
        parts = [self._dump_original(stmt) for stmt in body[:index]]
        if new_region.body:
            parts.append(middle[len("Module(body=[") : -len("], type_ignores=[])")])
        parts.extend(self._dump_original(stmt) for stmt in body[index + 1 :])
        return new_source, "Module(body=[" + ", ".join(parts) + "], type_ignores=[])"

    def _region(self, edits: Sequence[TextEdit]) -> tuple[int, int, int] | None:
        """(index, start, end) of the top-level statement whose lines contain every edit."""
        low = min(e.start for e in edits)
        high = max(e.end for e in edits)
        body = self.tree.body
        for index, stmt in enumerate(body):
            first, last = _first_line(stmt), stmt.end_lineno or stmt.lineno
            start, end = self.lines.line_start(first), self.lines.next_line_start(last)
            if start <= low and high <= end:
                alone = (index == 0 or (body[index - 1].end_lineno or 0) < first) and (
                    index + 1 == len(body) or _first_line(body[index + 1]) > last
                )
                return (index, start, end) if alone and stmt.col_offset == 0 else None
            if start > high:
                break
        return None

    def _dump_edited(self, new_tree: ast.Module, edits: Sequence[TextEdit], line_offset: int) -> str:
        """Dump of a re-parsed tree whose line numbers are `line_offset` below the file's."""
        if not self.enabled:
            return ast.dump(new_tree)
        start = min(e.start for e in edits)
        last_line = self.lines.line_of(max(e.end for e in edits))
        delta = sum(line_breaks(e.text) - line_breaks(self.lines.source[e.start : e.end]) for e in edits)
        first_line = self.lines.line_of(start)

        def reusable(node: ast.stmt) -> ast.stmt | None:
            end_line = (node.end_lineno or node.lineno) + line_offset
            if end_line <= first_line and self.lines.offset(end_line, node.end_col_offset or 0) <= start:
                return self._by_place.get(_place(node, -line_offset))
            if _first_line(node) + line_offset > last_line + delta:
                return self._by_place.get(_place(node, delta - line_offset))
            return None

        def walk(node: ast.AST) -> str:
            if isinstance(node, ast.stmt):
                original = reusable(node)
                if original is not None:
                    return self._dump_original(original)
            if isinstance(node, _BLOCK_TYPES):
                return compose_dump(node, walk)
            return ast.dump(node)

        return walk(new_tree)


def _parse(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for `x is 0` in a candidate
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _place(node: ast.stmt, delta: int) -> tuple[type, int, int, int, int]:
    """A statement's type and position, shifted back by `delta` lines."""
    return (
        type(node),
        _first_line(node) - delta,
        node.col_offset,
        (node.end_lineno or node.lineno) - delta,
        node.end_col_offset or 0,
    )
