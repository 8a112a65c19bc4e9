"""Operator templates: another operator of the same family (arithmetic, bitwise, comparison,
boolean, augmented assignment), a dropped unary operator, and a wrong operand (another value in
scope, or 0 / 1). Operator swaps edit just the operator token, so the operands' text is kept."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

OPERAND_REPLACE = Template("operand_replace", 0.85, "change binary operand")
BINOP_REPLACE = Template("binop_replace", 0.48, "change binary operator (incl. augmented assignment, // <-> /)")
COMPARE_REPLACE = Template("compare_replace", 0.48, "change comparison operator")
BOOLOP_REPLACE = Template("boolop_replace", 0.46, "`and` <-> `or`")
UNARY_REPLACE = Template("unary_replace", 0.44, "change unary operator")

_OPERAND_NAME_CAP = 4  # names tried in place of an operand

# Operators are only swapped within their family: `+` for `*` is a slip, `+` for `&` is not.
_ARITH_OPS: tuple[type[ast.operator], ...] = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
)
_BIT_OPS: tuple[type[ast.operator], ...] = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
OP_SYMBOL: dict[type[ast.AST], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.And: "and",
    ast.Or: "or",
}
# Comparison neighbours: the mistakes people actually make (strictness, direction, negation).
_CMP_NEIGHBOURS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt, ast.GtE),
    ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE),
    ast.Eq: (ast.NotEq, ast.Is),
    ast.NotEq: (ast.Eq, ast.IsNot),
    ast.Is: (ast.IsNot, ast.Eq),
    ast.IsNot: (ast.Is, ast.NotEq),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
# Comparisons between quantities (not identity or membership): where operands can be off by one.
ORDERING_OPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


def _is_plain_constant(node: ast.AST) -> bool:
    """A literal that `is` must not be used with (anything but None/True/False/...)."""
    return isinstance(node, ast.Constant) and node.value not in (None, True, False, Ellipsis)


def _op_family(op: ast.operator) -> tuple[type[ast.operator], ...]:
    """The family `op` is swapped within (`@` is in neither, so never swapped)."""
    return _ARITH_OPS if isinstance(op, _ARITH_OPS) else _BIT_OPS


def binop_replace(ctx: Context, node: ast.BinOp) -> Iterator[Mutation | None]:
    """`a // b` -> `a / b`, ...: every other operator of the same family."""
    family = _op_family(node.op)
    if isinstance(node.op, family):
        for op_type in family:
            if isinstance(node.op, op_type):
                continue
            new = ast.BinOp(left=node.left, op=op_type(), right=node.right)
            edit = ctx.render.op_edit(node.left, node.right, OP_SYMBOL[op_type])
            yield ctx.render.replace(BINOP_REPLACE, node, new, preferred=[edit] if edit else [])


def augassign_replace(ctx: Context, stmt: ast.AugAssign) -> Iterator[Mutation | None]:
    """`x -= y` -> `x += y`, ...: binop_replace on the augmented assignment's operator."""
    family = _op_family(stmt.op)
    for op_type in family:
        if isinstance(stmt.op, op_type) or not isinstance(stmt.op, family):
            continue
        new_aug = ast.AugAssign(target=stmt.target, op=op_type(), value=stmt.value)
        edit = ctx.render.op_edit(stmt.target, stmt.value, OP_SYMBOL[op_type] + "=")
        yield ctx.render.replace(BINOP_REPLACE, stmt, new_aug, preferred=[edit] if edit else [])


def _operand_replace(ctx: Context, parent: ast.AST, field_name: str, index: int | None) -> Iterator[Mutation | None]:
    """One operand of `parent` -> a value name not already in the expression, then 0 and 1."""
    operand = getattr(parent, field_name) if index is None else getattr(parent, field_name)[index]
    if isinstance(operand, ast.Constant) and type(operand.value) is not int:
        return
    names: list[str] = []
    if not isinstance(operand, ast.Name):
        # Names already in the expression give `a - a`-style nonsense.
        present = {sub.id for sub in ast.walk(parent) if isinstance(sub, ast.Name)}
        names = [n for n in ctx.facts.value_pool(operand) if n not in present][:_OPERAND_NAME_CAP]
    for name in names:
        yield ctx.render.replace(OPERAND_REPLACE, operand, ast.Name(id=name, ctx=ast.Load()), name)
    if isinstance(parent, ast.Compare) and not all(isinstance(op, ORDERING_OPS) for op in parent.ops):
        return  # `x is 0` is a warning and `0 in xs` a type error, never a fix
    for value in (0, 1):
        if isinstance(operand, ast.Constant) and operand.value == value:
            continue
        if value == 0 and isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add | ast.Sub):
            if field_name == "right":
                continue  # `x - 0` is just `x`: the plain drop is proposed by off_by_one
        yield ctx.render.replace(OPERAND_REPLACE, operand, ast.Constant(value=value), str(value))


def binop_operands(ctx: Context, node: ast.BinOp) -> Iterator[Mutation | None]:
    """operand_replace on both sides of a binary operation."""
    for side in ("left", "right"):
        yield from _operand_replace(ctx, node, side, None)


def compare_replace(ctx: Context, node: ast.Compare) -> Iterator[Mutation | None]:
    """Each comparison operator -> its neighbours (`<` -> `<=` / `>`); no `is` against a literal."""
    operands = [node.left, *node.comparators]
    for i, op in enumerate(node.ops):
        for op_type in _CMP_NEIGHBOURS.get(type(op), ()):
            if op_type in (ast.Is, ast.IsNot) and (
                _is_plain_constant(operands[i]) or _is_plain_constant(operands[i + 1])
            ):
                continue
            ops = list(node.ops)
            ops[i] = op_type()
            new = ast.Compare(left=node.left, ops=ops, comparators=node.comparators)
            edit = ctx.render.op_edit(operands[i], operands[i + 1], OP_SYMBOL[op_type])
            yield ctx.render.replace(COMPARE_REPLACE, node, new, preferred=[edit] if edit else [])


def compare_operands(ctx: Context, node: ast.Compare) -> Iterator[Mutation | None]:
    """operand_replace on every compared operand."""
    yield from _operand_replace(ctx, node, "left", None)
    for index in range(len(node.comparators)):
        yield from _operand_replace(ctx, node, "comparators", index)


def boolop_replace(ctx: Context, node: ast.BoolOp) -> Iterator[Mutation | None]:
    """`and` <-> `or`, editing every operator token of the chain."""
    other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    edits: list[TextEdit] = []
    for left, right in zip(node.values, node.values[1:], strict=False):
        edit = ctx.render.op_edit(left, right, OP_SYMBOL[type(other)])
        if edit is None:
            edits = []
            break
        edits.extend(edit)
    new = ast.BoolOp(op=other, values=list(node.values))
    yield ctx.render.replace(BOOLOP_REPLACE, node, new, preferred=[edits] if edits else [])


def unary_replace(ctx: Context, node: ast.UnaryOp) -> Iterator[Mutation | None]:
    """Drop the unary operator (`-abs(d)` -> `abs(d)`, `not x` -> `x`)."""
    start, end = ctx.facts.lines.span(node)
    width = 3 if isinstance(node.op, ast.Not) else 1
    text = ctx.facts.source[start + width : end].lstrip(" \t")
    yield ctx.render.replace(UNARY_REPLACE, node, node.operand, text)


BINOP_REPLACE_FAMILY = Family("binop_replace", "expression", (ast.BinOp,), (BINOP_REPLACE,), binop_replace)
BINOP_OPERANDS_FAMILY = Family("binop_operands", "expression", (ast.BinOp,), (OPERAND_REPLACE,), binop_operands)
COMPARE_REPLACE_FAMILY = Family("compare_replace", "expression", (ast.Compare,), (COMPARE_REPLACE,), compare_replace)
COMPARE_OPERANDS_FAMILY = Family("compare_operands", "expression", (ast.Compare,), (OPERAND_REPLACE,), compare_operands)
BOOLOP_REPLACE_FAMILY = Family("boolop_replace", "expression", (ast.BoolOp,), (BOOLOP_REPLACE,), boolop_replace)
UNARY_REPLACE_FAMILY = Family("unary_replace", "expression", (ast.UnaryOp,), (UNARY_REPLACE,), unary_replace)
AUGASSIGN_REPLACE_FAMILY = Family(
    "augassign_replace", "statement", (ast.AugAssign,), (BINOP_REPLACE,), augassign_replace
)
