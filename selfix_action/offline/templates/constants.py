"""Literal templates: a flipped boolean, an int off by one (or 0 <-> 1), and a literal collection
missing an element the file uses elsewhere."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.render import int_node
from selfix_action.offline.templates.values import Mutation, Template

LITERAL_TWEAK = Template("literal_tweak", 0.62, "change numeric literal")
ITERABLE_ADD = Template("iterable_add", 0.52, "add elements to iterable")
BOOL_FLIP = Template("bool_flip", 0.50, "change boolean literal (and None <-> bool on return)")

_ITER_CAP = 8  # literals tried as a missing element


def bool_flip(ctx: Context, node: ast.Constant) -> Iterator[Mutation | None]:
    """`True` <-> `False`."""
    if isinstance(node.value, bool):
        yield ctx.render.replace(BOOL_FLIP, node, ast.Constant(value=not node.value), str(not node.value))


def literal_tweak(ctx: Context, node: ast.Constant) -> Iterator[Mutation | None]:
    """An int literal ± 1, or 0 (1 when it is 0): off-by-one and wrong-start-value slips."""
    value = node.value
    if type(value) is not int:
        return
    slot = ctx.facts.slot(node)
    negated = slot is not None and isinstance(slot[0], ast.UnaryOp) and isinstance(slot[0].op, ast.USub)
    for new_value in dict.fromkeys((value + 1, value - 1, 1 if value == 0 else 0)):
        if new_value < 0 and negated:
            continue  # "--1" style noise
        if new_value == 0 and slot is not None and isinstance(slot[0], ast.BinOp):
            if isinstance(slot[0].op, ast.Add | ast.Sub) and slot[1] == "right":
                continue  # x + 0 is just x: the drop is proposed by off_by_one
        yield ctx.render.replace(LITERAL_TWEAK, node, int_node(new_value), str(new_value))


def iterable_add(ctx: Context, node: ast.List | ast.Tuple | ast.Set) -> Iterator[Mutation | None]:
    """Append a literal of the same type: strings of similar length first, ints by frequency."""
    facts = ctx.facts
    if not node.elts or not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
        return
    if not all(isinstance(e, ast.Constant) for e in node.elts):
        return
    values = [e.value for e in node.elts if isinstance(e, ast.Constant)]  # all of them (checked above)
    strings = [v for v in values if type(v) is str]  # exactly str and int: never bool
    numbers = [v for v in values if type(v) is int]
    pool: Sequence[str | int]
    if len(strings) == len(values):
        lengths = sorted(len(v) for v in strings)
        median = lengths[len(lengths) // 2]
        closest = sorted((v for v in facts.str_pool if v not in values), key=lambda v: abs(len(v) - median))
        pool = closest
    elif len(numbers) == len(values):
        pool = [v for v in facts.int_pool if v not in values]
    else:
        return
    last = node.elts[-1]
    last_text = ctx.render.text(last)
    at = facts.lines.span(last)[1]
    for value in pool[:_ITER_CAP]:
        literal = repr(value)
        # Match the file's quote style where the value allows it.
        if isinstance(value, str) and last_text.startswith('"') and value.isprintable():
            if '"' not in value and "\\" not in value:
                literal = f'"{value}"'
        new_elts = [*node.elts, ast.Constant(value=value)]
        new: ast.expr
        if isinstance(node, ast.Set):
            new = ast.Set(elts=new_elts)
        else:
            new = type(node)(elts=new_elts, ctx=ast.Load())
        yield ctx.render.replace(ITERABLE_ADD, node, new, preferred=[[TextEdit(at, at, f", {literal}")]])


BOOL_FLIP_FAMILY = Family("bool_flip", "expression", (ast.Constant,), (BOOL_FLIP,), bool_flip)
LITERAL_TWEAK_FAMILY = Family("literal_tweak", "expression", (ast.Constant,), (LITERAL_TWEAK,), literal_tweak)
ITERABLE_ADD_FAMILY: Family[ast.List | ast.Tuple | ast.Set] = Family(
    "iterable_add", "expression", (ast.List, ast.Tuple, ast.Set), (ITERABLE_ADD,), iterable_add
)
