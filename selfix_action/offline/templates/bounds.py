"""Off-by-one templates: `e` -> `e ± 1` and `e ± k` -> `e` on range bounds, indexes, slice bounds and
compared quantities, the 0- vs 1-based `range(n)` mix-up, and skipping a header or trailer item
(`xs` -> `xs[1:]` / `xs[:-1]`) where a sequence is iterated or passed on."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.analysis import is_int
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.operators import ORDERING_OPS
from selfix_action.offline.templates.render import PREC_ADD, int_node
from selfix_action.offline.templates.values import Mutation, Template

OFF_BY_ONE = Template("off_by_one", 0.42, "index / range / slice bounds")
SLICE_ADD = Template("slice_add", 0.36, "skip the first or last item of a sequence")

# Name fragments that suggest a sequence (plural names count too), where slicing makes sense.
_SEQ_HINTS = ("list", "items", "seq", "arr", "lines", "words", "chars", "text", "data", "queue", "stack")


def plus_minus(ctx: Context, node: ast.expr) -> Iterator[Mutation | None]:
    """`e` -> `e + 1` / `e - 1`, and `e ± k` -> `e` (constants are left to literal_tweak)."""
    render = ctx.render
    if isinstance(node, ast.Constant | ast.Compare | ast.BoolOp | ast.JoinedStr | ast.Tuple | ast.Slice):
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and is_int(node.right):
        yield render.replace(OFF_BY_ONE, node, node.left, render.text(node.left))
        return
    base = render.paren(node, PREC_ADD)
    for op_type, symbol in ((ast.Add, "+"), (ast.Sub, "-")):
        new = ast.BinOp(left=node, op=op_type(), right=ast.Constant(value=1))
        yield render.replace(OFF_BY_ONE, node, new, f"{base} {symbol} 1")


def range_bounds(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """Bounds of a `range(...)` call, and `range(n)` -> `range(1, n)` / `range(1, n + 1)`."""
    if not (isinstance(node.func, ast.Name) and node.func.id == "range") or node.keywords:
        return
    if any(isinstance(arg, ast.Starred) for arg in node.args) or not 1 <= len(node.args) <= 3:
        return
    render = ctx.render
    for arg in node.args[:2]:
        yield from plus_minus(ctx, arg)
    if len(node.args) == 1:
        stop = node.args[0]
        stop_text = render.text(stop)
        # range(n) -> range(1, n) / range(1, n + 1): the 0- vs 1-based loop mix-up.
        variants: list[tuple[ast.expr, str]] = [(stop, stop_text)]
        if not isinstance(stop, ast.Constant):
            bumped = ast.BinOp(left=stop, op=ast.Add(), right=ast.Constant(value=1))
            variants.append((bumped, f"{render.paren(stop, PREC_ADD)} + 1"))
        for new_stop, text in variants:
            new = ast.Call(func=node.func, args=[ast.Constant(value=1), new_stop], keywords=[])
            at = ctx.facts.lines.span(stop)
            yield render.replace(OFF_BY_ONE, node, new, preferred=[[TextEdit(at[0], at[1], f"1, {text}")]])


def subscript_bounds(ctx: Context, node: ast.Subscript) -> Iterator[Mutation | None]:
    """An index ± 1, a slice bound ± 1, or a slice bound dropped (`xs[:-1]` -> `xs[:]`)."""
    index = node.slice
    if isinstance(index, ast.Slice):
        for bound in ("lower", "upper"):
            value = getattr(index, bound)
            if value is None:
                continue
            yield from plus_minus(ctx, value)
            start, end = ctx.facts.lines.span(value)
            new = ast.Slice(
                lower=None if bound == "lower" else index.lower,
                upper=None if bound == "upper" else index.upper,
                step=index.step,
            )
            yield ctx.render.replace(OFF_BY_ONE, index, new, preferred=[[TextEdit(start, end, "")]])
    elif not isinstance(index, ast.Constant | ast.Tuple):
        yield from plus_minus(ctx, index)


def compare_bounds(ctx: Context, node: ast.Compare) -> Iterator[Mutation | None]:
    """Off-by-one on the compared quantities (`i < len(xs) - 1` -> `i < len(xs)`)."""
    if all(isinstance(op, ORDERING_OPS) for op in node.ops):
        for operand in [node.left, *node.comparators]:
            yield from plus_minus(ctx, operand)


def _looks_sequence(name: str) -> bool:
    lowered = name.lower()
    plural = len(lowered) > 2 and lowered.endswith("s") and not lowered.endswith("ss")
    return plural or any(hint in lowered for hint in _SEQ_HINTS)


def slice_add(ctx: Context, node: ast.Name) -> Iterator[Mutation | None]:
    """`for x in xs` -> `for x in xs[1:]` / `xs[:-1]`, and the same for a sequence argument."""
    if not isinstance(node.ctx, ast.Load):
        return
    slot = ctx.facts.slot(node)
    if slot is None:
        return
    parent, name, _ = slot
    in_for = isinstance(parent, ast.For | ast.AsyncFor | ast.comprehension) and name == "iter"
    in_call = isinstance(parent, ast.Call) and name == "args" and _looks_sequence(node.id)
    if not (in_for or in_call):
        return
    for lower, upper, suffix in ((ast.Constant(value=1), None, "[1:]"), (None, int_node(-1), "[:-1]")):
        new = ast.Subscript(
            value=ast.Name(id=node.id, ctx=ast.Load()),
            slice=ast.Slice(lower=lower, upper=upper, step=None),
            ctx=ast.Load(),
        )
        yield ctx.render.replace(SLICE_ADD, node, new, node.id + suffix)


RANGE_BOUNDS_FAMILY = Family("range_bounds", "expression", (ast.Call,), (OFF_BY_ONE,), range_bounds)
SUBSCRIPT_BOUNDS_FAMILY = Family("subscript_bounds", "expression", (ast.Subscript,), (OFF_BY_ONE,), subscript_bounds)
COMPARE_BOUNDS_FAMILY = Family("compare_bounds", "expression", (ast.Compare,), (OFF_BY_ONE,), compare_bounds)
SLICE_ADD_FAMILY = Family("slice_add", "expression", (ast.Name,), (SLICE_ADD,), slice_add)
