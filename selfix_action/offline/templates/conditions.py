"""Condition templates: a truth test that is too strict, too loose or inverted. Tests get negated,
guarded by a None check (`x is not None and ...`, `x is None or ...`), and boolean operations lose
one operand (dropping a conjunct widens a condition, dropping a disjunct narrows it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.render import PREC_AND, PREC_NOT
from selfix_action.offline.templates.values import Mutation, Template

CONDITION_NARROW = Template("condition_narrow", 0.60, "more specific if")
CONDITION_WIDEN = Template("condition_widen", 0.58, "less specific if")
CONDITION_NEGATE = Template("condition_negate", 0.56, "inverted test")

_CONDITION_NAME_CAP = 2  # names a test is guarded on


def operand_drop(ctx: Context, node: ast.BoolOp) -> Iterator[Mutation | None]:
    """Drop one operand of `and` (widen) or `or` (narrow), with its operator."""
    template = CONDITION_WIDEN if isinstance(node.op, ast.And) else CONDITION_NARROW
    spans = [ctx.facts.lines.span(v) for v in node.values]
    for k in range(len(node.values)):
        rest = [v for i, v in enumerate(node.values) if i != k]
        replacement = rest[0] if len(rest) == 1 else ast.BoolOp(op=type(node.op)(), values=rest)
        if k > 0:
            edit = TextEdit(spans[k - 1][1], spans[k][1], "")
        else:
            edit = TextEdit(spans[0][0], spans[1][0], "")
        yield ctx.render.replace(template, node, replacement, preferred=[[edit]])


def condition(ctx: Context, node: ast.expr) -> Iterator[Mutation | None]:
    """Negate a test (or drop its `not`), and guard it on None for the first local names in it."""
    facts, render = ctx.facts, ctx.render
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        start, end = facts.lines.span(node)
        yield render.replace(CONDITION_NEGATE, node, node.operand, facts.source[start + 3 : end].lstrip())
    else:
        negated = ast.UnaryOp(op=ast.Not(), operand=node)
        yield render.replace(CONDITION_NEGATE, node, negated, f"not {render.paren(node, PREC_NOT)}")
    chain = facts.scope_chain(node)
    # None guards are about locals/parameters; module constants are never None by design.
    local_scopes = [scope for scope in chain if not isinstance(scope, ast.Module)] or chain
    names = [
        sub.id
        for sub in ast.walk(node)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and facts.kind(sub.id, local_scopes) == "value"
    ]
    for name in list(dict.fromkeys(names))[:_CONDITION_NAME_CAP]:
        guard = ast.Compare(
            left=ast.Name(id=name, ctx=ast.Load()),
            ops=[ast.IsNot()],
            comparators=[ast.Constant(value=None)],
        )
        narrowed = ast.BoolOp(op=ast.And(), values=[guard, node])
        text = f"{name} is not None and {render.paren(node, PREC_NOT)}"
        yield render.replace(CONDITION_NARROW, node, narrowed, text)
        escape = ast.Compare(
            left=ast.Name(id=name, ctx=ast.Load()), ops=[ast.Is()], comparators=[ast.Constant(value=None)]
        )
        widened = ast.BoolOp(op=ast.Or(), values=[escape, node])
        text = f"{name} is None or {render.paren(node, PREC_AND)}"
        yield render.replace(CONDITION_WIDEN, node, widened, text)


OPERAND_DROP_FAMILY = Family(
    "operand_drop", "expression", (ast.BoolOp,), (CONDITION_WIDEN, CONDITION_NARROW), operand_drop
)
CONDITION_FAMILY: Family[ast.expr] = Family(
    "condition", "test", (ast.expr,), (CONDITION_NEGATE, CONDITION_NARROW, CONDITION_WIDEN), condition
)
