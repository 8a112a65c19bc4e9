"""The swapped-fields template: a format string whose replacement fields are in the wrong order
(`f"{last}, {first}"` for `f"{first} {last}"`, `"%s of %s" % (total, done)`). The fix swaps two
fields: neighbours first, then any two. A field moves whole, with its conversion and format spec
(`{price:.2f}` stays a price); when both fields are formatted (and differently), swapping only their
values is tried too. (`"{} {}".format(a, b)` is the arg_swap template's: its fields are arguments.)
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced none of their 331 code hunks, so it has the smoothed floor, below every hand prior.
FIELD_SWAP = Template("field_swap", 0.099, "swap two replacement fields of a format string")

_CAP = 6  # swaps tried per format string


def _pairs(count: int) -> list[tuple[int, int]]:
    """Index pairs of `count` fields: neighbours first, then by distance."""
    return [(i, i + gap) for gap in range(1, count) for i in range(count - gap)][:_CAP]


def _field_span(source: str, value_start: int, value_end: int) -> tuple[int, int] | None:
    """The whole replacement field (`{` .. `}`) around a field's value, or None when the text is not the plain
    shape (a self-documenting `{x=}` field, or a value whose span does not sit inside braces)."""
    start = value_start - 1
    while start >= 0 and source[start] in " \t":
        start -= 1
    if start < 0 or source[start] != "{":
        return None
    depth = 0
    end = value_end
    while end < len(source):
        char = source[end]
        if char in "\r\n" and depth == 0 and source[value_end:end].strip() == "":
            return None  # a field spanning lines is left alone
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                break
            depth -= 1
        end += 1
    else:
        return None
    head = source[value_end:end].lstrip(" \t")
    if head.startswith("="):
        return None  # `{x=}` prints its own text: swapping it would change the label, not the order
    return start, end + 1


def joined_swap(ctx: Context, node: ast.JoinedStr) -> Iterator[Mutation | None]:
    """Swap two fields of an f-string (the fields whole, and their values alone when formatted differently)."""
    facts = ctx.facts
    source = facts.source
    if id(node) not in facts.parents:
        return
    fields = [(i, v) for i, v in enumerate(node.values) if isinstance(v, ast.FormattedValue)]
    if len(fields) < 2:
        return
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for _, formatted in fields:
        value_span = facts.lines.span(formatted.value)
        whole = _field_span(source, *value_span)
        if whole is None:
            return
        spans.append((whole, value_span))
    for a, b in _pairs(len(fields)):
        (ia, fa), (ib, fb) = fields[a], fields[b]
        (whole_a, value_a), (whole_b, value_b) = spans[a], spans[b]
        if ast.dump(fa.value) == ast.dump(fb.value):
            continue
        edits = [
            TextEdit(whole_a[0], whole_a[1], source[whole_b[0] : whole_b[1]]),
            TextEdit(whole_b[0], whole_b[1], source[whole_a[0] : whole_a[1]]),
        ]
        yield Mutation(FIELD_SWAP, [edits], _swap_items(node, ia, ib), [node])
        if _formatted(fa) and _formatted(fb) and ast.dump(fa) != ast.dump(fb):
            edits = [
                TextEdit(value_a[0], value_a[1], source[value_b[0] : value_b[1]]),
                TextEdit(value_b[0], value_b[1], source[value_a[0] : value_a[1]]),
            ]
            yield Mutation(FIELD_SWAP, [edits], _swap_values(fa, fb), [fa, fb])  # both re-dumped


def percent_swap(ctx: Context, node: ast.BinOp) -> Iterator[Mutation | None]:
    """Swap two values of a %-format's tuple (`"%s: %s" % (value, name)`)."""
    if not isinstance(node.op, ast.Mod) or not isinstance(node.right, ast.Tuple):
        return
    if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return
    elts = node.right.elts
    if len(elts) < 2 or any(isinstance(e, ast.Starred) for e in elts):
        return
    lines, render = ctx.facts.lines, ctx.render
    for a, b in _pairs(len(elts)):
        if ast.dump(elts[a]) == ast.dump(elts[b]):
            continue
        swapped = list(elts)
        swapped[a], swapped[b] = elts[b], elts[a]
        (sa, ea), (sb, eb) = lines.span(elts[a]), lines.span(elts[b])
        edits = [TextEdit(sa, ea, render.text(elts[b])), TextEdit(sb, eb, render.text(elts[a]))]
        new = ast.Tuple(elts=swapped, ctx=ast.Load())
        yield render.replace(FIELD_SWAP, node.right, new, preferred=[edits])


def _formatted(field: ast.FormattedValue) -> bool:
    """Has the field a conversion or a format spec of its own?"""
    return field.conversion != -1 or field.format_spec is not None


def _swap_items(node: ast.JoinedStr, a: int, b: int) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        values = node.values
        values[a], values[b] = values[b], values[a]

        def undo() -> None:
            values[a], values[b] = values[b], values[a]

        return undo

    return apply


def _swap_values(a: ast.FormattedValue, b: ast.FormattedValue) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        a.value, b.value = b.value, a.value

        def undo() -> None:
            a.value, b.value = b.value, a.value

        return undo

    return apply


JOINED_SWAP_FAMILY = Family("field_swap", "expression", (ast.JoinedStr,), (FIELD_SWAP,), joined_swap)
PERCENT_SWAP_FAMILY = Family("percent_swap", "expression", (ast.BinOp,), (FIELD_SWAP,), percent_swap)
