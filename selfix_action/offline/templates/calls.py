"""Call templates: the right function with the wrong arguments (swapped, one too many, one missing),
and a call missing around an expression or wrapped around one by mistake."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.analysis import IMPLICIT_NAMES
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

ARG_ADD = Template("arg_add", 0.80, "same function, more args")
ARG_DROP = Template("arg_drop", 0.78, "same function, fewer args")
ARG_SWAP = Template("arg_swap", 0.76, "same function, swap args")
WRAP_CALL = Template("wrap_call", 0.70, "add function around expression")
UNWRAP_CALL = Template("unwrap_call", 0.68, "remove function around expression")

_ARG_ADD_CAP = 3  # names tried as an extra argument
# Builtins taking exactly one positional argument: adding or dropping one can only raise.
_UNARY_BUILTINS = {
    "len",
    "abs",
    "list",
    "tuple",
    "set",
    "frozenset",
    "sorted",
    "reversed",
    "repr",
    "bool",
    "id",
    "hash",
    "callable",
    "ord",
    "chr",
    "any",
    "all",
}
# Argument order does not matter for these.
_SYMMETRIC_CALLS = {"min", "max", "set", "frozenset"}


def _func_name(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else ""


def _arity_fixed(node: ast.Call) -> bool:
    """A one-argument builtin called with its one argument: no argument edit can fix it."""
    return _func_name(node) in _UNARY_BUILTINS and len(node.args) == 1 and not node.keywords


def arg_swap(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """Swap two positional arguments (at most two apart)."""
    if _arity_fixed(node):
        return
    lines, render = ctx.facts.lines, ctx.render
    positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
    for i in range(0 if _func_name(node) not in _SYMMETRIC_CALLS else len(positional), len(positional)):
        for j in range(i + 1, min(len(positional), i + 3)):
            a, b = positional[i], positional[j]
            args = list(node.args)
            ia, ib = args.index(a), args.index(b)
            args[ia], args[ib] = b, a
            new = ast.Call(func=node.func, args=args, keywords=node.keywords)
            (sa, ea), (sb, eb) = lines.span(a), lines.span(b)
            edits = [TextEdit(sa, ea, render.text(b)), TextEdit(sb, eb, render.text(a))]
            yield render.replace(ARG_SWAP, node, new, preferred=[edits])


def arg_drop(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """Drop one argument (positional or keyword), with the separator next to it."""
    if _arity_fixed(node):
        return
    lines = ctx.facts.lines
    items: list[ast.AST] = sorted([*node.args, *node.keywords], key=lambda n: lines.span(n)[0])
    spans = [lines.span(item) for item in items]
    for k, item in enumerate(items):
        if k > 0:
            edit = TextEdit(spans[k - 1][1], spans[k][1], "")
        elif len(items) > 1:
            edit = TextEdit(spans[0][0], spans[1][0], "")
        else:
            edit = TextEdit(spans[0][0], spans[0][1], "")
        new = ast.Call(
            func=node.func,
            args=[a for a in node.args if a is not item],
            keywords=[kw for kw in node.keywords if kw is not item],
        )
        yield ctx.render.replace(ARG_DROP, node, new, preferred=[[edit]])


def arg_add(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """Add a name in scope as an extra positional argument."""
    if _arity_fixed(node):
        return
    lines = ctx.facts.lines
    present = {a.id for a in node.args if isinstance(a, ast.Name)}
    pool = [n for n in ctx.facts.value_pool(node) if n not in present][:_ARG_ADD_CAP]
    for name in pool:
        new = ast.Call(func=node.func, args=[*node.args, ast.Name(id=name, ctx=ast.Load())], keywords=node.keywords)
        if node.args:
            at = lines.span(node.args[-1])[1]
            edit = TextEdit(at, at, f", {name}")
        elif node.keywords:
            at = lines.span(node.keywords[0])[0]
            edit = TextEdit(at, at, f"{name}, ")
        else:
            at = lines.span(node)[1] - 1
            edit = TextEdit(at, at, name)
        yield ctx.render.replace(ARG_ADD, node, new, preferred=[[edit]])


def unwrap_call(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """`f(x)` -> `x`, unless the call is a statement of its own or is itself called."""
    if len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
        slot = ctx.facts.slot(node)
        if slot is not None and not isinstance(slot[0], ast.Expr) and not ctx.facts.is_call_func(node):
            arg = node.args[0]
            yield ctx.render.replace(UNWRAP_CALL, node, arg, ctx.render.text(arg))


def wrap_call(ctx: Context, node: ast.expr) -> Iterator[Mutation | None]:
    """`x` -> `len(x)`, `max(0, x)`, `int(x)`, ...: the conversion or clamp a value was missing."""
    facts = ctx.facts
    if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load) or facts.is_call_func(node):
        return
    slot = facts.slot(node)
    if slot is None or isinstance(slot[0], ast.Expr | ast.Attribute | ast.Raise) or slot[1] == "decorator_list":
        return  # wrapping a bare call statement, a decorator or the object of `x.attr`: never a fix
    if isinstance(node, ast.Name) and (
        node.id in IMPLICIT_NAMES or facts.kind(node.id, facts.scope_chain(node)) != "value"
    ):
        return
    # Cheap type sense keeps the fan-out down: drop wrappers that can only raise or no-op.
    funcs = ["max", "len", "int", "list", "abs", "float", "str"]
    parent, field_name = slot[0], slot[1]
    if isinstance(node, ast.BinOp):
        funcs = [f for f in funcs if f not in ("len", "list")]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "len":  # already a non-negative int
            funcs = ["float", "str"]
        funcs = [f for f in funcs if f != node.func.id]
    if field_name == "iter" and isinstance(parent, ast.For | ast.AsyncFor | ast.comprehension):
        funcs = [f for f in funcs if f == "list"]  # only iterables make sense here
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Sub | ast.Div | ast.FloorDiv | ast.Pow):
        funcs = [f for f in funcs if f not in ("str", "list")]
    text = ctx.render.text(node)
    for func in funcs:
        args: list[ast.expr] = [node]
        prefix = ""
        if func == "max":
            args = [ast.Constant(value=0), node]
            prefix = "0, "
        new = ast.Call(func=ast.Name(id=func, ctx=ast.Load()), args=args, keywords=[])
        yield ctx.render.replace(WRAP_CALL, node, new, f"{func}({prefix}{text})")


ARG_SWAP_FAMILY = Family("arg_swap", "expression", (ast.Call,), (ARG_SWAP,), arg_swap)
ARG_DROP_FAMILY = Family("arg_drop", "expression", (ast.Call,), (ARG_DROP,), arg_drop)
ARG_ADD_FAMILY = Family("arg_add", "expression", (ast.Call,), (ARG_ADD,), arg_add)
UNWRAP_CALL_FAMILY = Family("unwrap_call", "expression", (ast.Call,), (UNWRAP_CALL,), unwrap_call)
# Only values that a conversion or clamp could be missing around.
WRAP_CALL_FAMILY: Family[ast.expr] = Family(
    "wrap_call",
    "expression",
    (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.BinOp),
    (WRAP_CALL,),
    wrap_call,
)
