"""The assertion-guided string template: when a failing assertion compared two strings (`assert
'SELECT DISTINCTname' == 'SELECT DISTINCT name'`), the literal that produced the differing part of
one gets the edit that turns that part into the other's (`'DISTINCT'` -> `'DISTINCT '`).

Which side is the code's output is not known (pytest and unittest order them differently), so
both directions are tried; a literal qualifies only where its value occurs in the string being
edited and the differences inside it are wholly its own.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator

from selfix_action.offline.templates.analysis import is_docstring
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced 1 of their 331 code hunks (scrapy 38), as often as wrap_call, stmt_insert or condition_narrow.
STRING_EDIT = Template("string_edit", 0.296, "edit a string literal as the failing assertion's expected text says")

_CAP = 3  # edited values tried per literal
_OCCURRENCES = 3  # places a literal's value is looked for in one compared string
# %-style and str.format placeholders: the text around them is what shows in the output.
_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[sdrifxXoeEgGca%]|\{[^{}]*\}")
_MIN_FRAGMENT = 2  # a shorter fragment of a format string occurs almost anywhere


def literal_edit(text: str, target: str, start: int, end: int) -> str | None:
    """The literal `text[start:end]` with the edits of `text` -> `target` that fall inside it, or
    None when an edit straddles its ends or none touches it."""
    value = text[start:end]
    pieces: list[str] = []
    cursor = start
    touched = False
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, text, target, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        inside = start <= i1 and i2 <= end
        outside = i2 < start or i1 > end or (i1 == i2 and not start <= i1 <= end)
        if i1 < i2 and (i2 == start or i1 == end):
            outside = True  # a replaced or deleted neighbour that only touches the literal
        if not inside and not outside:
            return None
        if inside:
            touched = True
            pieces.append(text[cursor:i1])
            pieces.append(target[j1:j2])
            cursor = i2
    if not touched:
        return None
    pieces.append(text[cursor:end])
    new = "".join(pieces)
    return new if new != value else None


def fragments(value: str) -> list[tuple[int, str]]:
    """The parts of a literal that appear verbatim in what it produces: the whole value, or for a
    format string the text between its placeholders, with their offsets."""
    if not _PLACEHOLDER.search(value):
        return [(0, value)]
    found: list[tuple[int, str]] = []
    start = 0
    for match in _PLACEHOLDER.finditer(value):
        if match.start() - start >= _MIN_FRAGMENT:
            found.append((start, value[start : match.start()]))
        start = match.end()
    if len(value) - start >= _MIN_FRAGMENT:
        found.append((start, value[start:]))
    return found


def string_edit(ctx: Context, node: ast.Constant) -> Iterator[Mutation | None]:
    """The literal's value, edited as the compared strings differ where the value occurs in them."""
    value = node.value
    if not ctx.hints.compared or not isinstance(value, str) or not value:
        return
    stmt = ctx.facts.enclosing_stmt(node)
    slot = ctx.facts.slot(node)
    if stmt is None or is_docstring(stmt) or slot is None or isinstance(slot[0], ast.JoinedStr):
        return
    found: list[str] = []
    for left, right in ctx.hints.compared:
        for text, target in ((left, right), (right, left)):
            for offset, fragment in fragments(value):
                at = text.find(fragment)
                for _ in range(_OCCURRENCES):
                    if at < 0:
                        break
                    edited = literal_edit(text, target, at, at + len(fragment))
                    if edited is not None:
                        new = value[:offset] + edited + value[offset + len(fragment) :]
                        if new not in found:
                            found.append(new)
                    at = text.find(fragment, at + 1)
    for new in found[:_CAP]:
        yield ctx.render.replace(STRING_EDIT, node, ast.Constant(value=new), _string_text(ctx.render.text(node), new))


def _string_text(original: str, value: str) -> str:
    """`value` as a literal in the original's quote style where it can be written plainly."""
    quote = original[:1]
    if quote in ("'", '"') and not original.startswith(quote * 3) and value.isprintable():
        if quote not in value and "\\" not in value:
            return f"{quote}{value}{quote}"
    return repr(value)


STRING_EDIT_FAMILY = Family("string_edit", "expression", (ast.Constant,), (STRING_EDIT,), string_edit)
