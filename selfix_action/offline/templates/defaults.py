"""The mutable-default template: `def f(x=[])` shares one list between calls; the fix is the None
sentinel (`x=None` plus `if x is None: x = []` at the top of the body). It applies from any line of
the function, since the symptom shows in the body while the bug is in the signature."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator

from selfix_action.offline.spans import TextEdit, shorten
from selfix_action.offline.templates.analysis import first_line, is_docstring
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

MUTABLE_DEFAULT = Template("mutable_default", 0.32, "None sentinel for a mutable default argument")

# Calls that build a fresh mutable object (when called without arguments).
_MUTABLE_CALLS = {"list", "dict", "set"}

Function = ast.FunctionDef | ast.AsyncFunctionDef


def mutable_default(ctx: Context, func: Function) -> Iterator[Mutation | None]:
    """One candidate per mutable default (`[]`, `{}`, `set()`, ...), positional or keyword-only."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs: list[tuple[ast.arg, ast.expr]] = list(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    body = func.body
    first = 1 if is_docstring(body[0]) else 0
    for arg, default in pairs:
        mutable = isinstance(default, ast.List | ast.Dict | ast.Set) or (
            isinstance(default, ast.Call)
            and isinstance(default.func, ast.Name)
            and default.func.id in _MUTABLE_CALLS
            and not default.args
            and not default.keywords
        )
        if not mutable:
            continue
        edits = _sentinel_edits(ctx, func, arg.arg, default, first)
        if edits is None:
            continue

        def apply(func: Function = func, default: ast.expr = default, name: str = arg.arg) -> Callable[[], None]:
            undo_default = ctx.render.swap(default, ast.Constant(value=None))()
            guard = ast.If(
                test=ast.Compare(
                    left=ast.Name(id=name, ctx=ast.Load()),
                    ops=[ast.Is()],
                    comparators=[ast.Constant(value=None)],
                ),
                body=[ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=copy.deepcopy(default))],
                orelse=[],
            )
            func.body.insert(first, guard)

            def undo() -> None:
                func.body.pop(first)
                undo_default()

            return undo

        description = f"use a None sentinel for mutable default `{arg.arg}={shorten(ctx.render.text(default))}`"
        yield Mutation(MUTABLE_DEFAULT, [edits], apply, [default], description)


def _sentinel_edits(ctx: Context, func: Function, name: str, default: ast.expr, first: int) -> list[TextEdit] | None:
    """`=None` in the signature and the guard before the first statement after the docstring,
    indented like the body; None when a one-line def leaves no room for the guard."""
    lines = ctx.facts.lines
    body = func.body
    nl = lines.newline
    start, end = lines.span(default)
    value_text = ctx.render.text(default)
    if "\n" in value_text or "\r" in value_text:
        value_text = ast.unparse(default)
    if first < len(body):
        anchor = body[first]
        anchor_start = lines.span(anchor)[0]
        if anchor.lineno == func.lineno or not lines.starts_line(anchor_start):
            return None  # one-line def: no room for a guard without reformatting
        indent = lines.indent_of(anchor.lineno)
        at = lines.line_start(first_line(anchor))
        lead, trail = "", nl
    else:  # body is only a docstring: guard goes after it
        doc = body[0]
        if not lines.ends_line(lines.span(doc)[1]) or doc.lineno == func.lineno:
            return None
        indent = lines.indent_of(doc.lineno)
        last = doc.end_lineno or doc.lineno
        at = lines.next_line_start(last)
        has_break = lines.has_line_break(last)
        lead, trail = ("", nl) if has_break else (nl, "")
    def_indent = lines.indent_of(func.lineno)
    unit = indent[len(def_indent) :] if indent.startswith(def_indent) and len(indent) > len(def_indent) else "    "
    guard = f"{lead}{indent}if {name} is None:{nl}{indent}{unit}{name} = {value_text}{trail}"
    return [TextEdit(start, end, "None"), TextEdit(at, at, guard)]


MUTABLE_DEFAULT_FAMILY: Family[ast.FunctionDef | ast.AsyncFunctionDef] = Family(
    "mutable_default", "function", (ast.FunctionDef, ast.AsyncFunctionDef), (MUTABLE_DEFAULT,), mutable_default
)
