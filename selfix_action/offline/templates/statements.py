"""Statement templates: a wrong returned value, a statement too many (deleted), and a statement
missing (copied from the same function or class, before or after the target)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator

from selfix_action.offline.spans import TextEdit, shorten
from selfix_action.offline.templates.analysis import FileFacts, first_line, is_compound
from selfix_action.offline.templates.constants import BOOL_FLIP
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

STMT_INSERT = Template("stmt_insert", 0.28, "add a statement copied from the same function or class")
STMT_DELETE = Template("stmt_delete", 0.24, "remove a statement")
RETURN_REPLACE = Template("return_replace", 0.20, "return None or another value in scope")

_RETURN_NAME_CAP = 4  # names tried as the returned value
_INSERT_SOURCE_CAP = 6  # nearest statements tried as the missing one


def return_value(ctx: Context, stmt: ast.Return) -> Iterator[Mutation | None]:
    """Bare `return` gets a value; None <-> bool; any other value -> None or a name in scope."""
    facts, render = ctx.facts, ctx.render
    value = stmt.value
    start = facts.lines.span(stmt)[0]
    if value is None:
        at = start + len("return")
        choices: list[tuple[Template, str, ast.expr]] = [
            (BOOL_FLIP, "True", ast.Constant(value=True)),
            (BOOL_FLIP, "False", ast.Constant(value=False)),
        ]
        for name in facts.value_pool(stmt)[:_RETURN_NAME_CAP]:
            choices.append((RETURN_REPLACE, name, ast.Name(id=name, ctx=ast.Load())))
        for template, text, node in choices:
            new = ast.Return(value=node)
            yield render.replace(template, stmt, new, preferred=[[TextEdit(at, at, f" {text}")]])
        return
    if isinstance(value, ast.Constant) and value.value is None:
        for flag in (True, False):
            yield render.replace(BOOL_FLIP, value, ast.Constant(value=flag), str(flag))
        return
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        yield render.replace(BOOL_FLIP, value, ast.Constant(value=None), "None")
        return
    yield render.replace(RETURN_REPLACE, value, ast.Constant(value=None), "None")
    if not isinstance(value, ast.Name):
        for name in facts.value_pool(stmt)[:_RETURN_NAME_CAP]:
            yield render.replace(RETURN_REPLACE, value, ast.Name(id=name, ctx=ast.Load()), name)


def _whole_lines(facts: FileFacts, stmt: ast.stmt) -> tuple[int, int] | None:
    """Span of the full lines a statement occupies alone, line break included."""
    lines = facts.lines
    start, end = lines.span(stmt)
    if not (lines.starts_line(start) and lines.ends_line(end)):
        return None
    return lines.line_start(first_line(stmt)), lines.next_line_start(stmt.end_lineno or stmt.lineno)


def stmt_delete(ctx: Context, stmt: ast.stmt) -> Iterator[Mutation | None]:
    """Delete a simple statement (its whole lines), or make it `pass` when it is a block's only one."""
    facts = ctx.facts
    if is_compound(stmt):
        return  # deleting a whole block is never a one-statement fix
    if isinstance(stmt, ast.Pass | ast.Global | ast.Nonlocal):
        return
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return  # docstrings / bare literals
    slot = facts.slot(stmt)
    if slot is None or slot[2] is None:
        return
    parent, name, index = slot[0], slot[1], slot[2]
    siblings: list[ast.stmt] = getattr(parent, name)
    described = f"delete `{shorten(ctx.render.text(stmt))}`"
    if len(siblings) == 1:
        mutation = ctx.render.replace(STMT_DELETE, stmt, ast.Pass(), "pass")
        if mutation is not None:
            mutation.description = described
        yield mutation
        return
    whole = _whole_lines(facts, stmt)
    if whole is None:
        return

    def apply() -> Callable[[], None]:
        siblings.pop(index)

        def undo() -> None:
            siblings.insert(index, stmt)

        return undo

    yield Mutation(STMT_DELETE, [[TextEdit(whole[0], whole[1], "")]], apply, [parent], described)


def stmt_insert(ctx: Context, stmt: ast.stmt) -> Iterator[Mutation | None]:
    """Copy a simple statement from the same function/class next to the target."""
    facts, lines = ctx.facts, ctx.facts.lines
    slot = facts.slot(stmt)
    if slot is None or slot[2] is None:
        return
    parent, name, index = slot[0], slot[1], slot[2]
    siblings: list[ast.stmt] = getattr(parent, name)
    start, end = lines.span(stmt)
    if not lines.starts_line(start):
        return
    container: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None = None
    for ancestor in facts.ancestors(stmt):
        if isinstance(ancestor, ast.FunctionDef | ast.AsyncFunctionDef):
            container = ancestor
            owner = facts.slot(ancestor)
            if owner is not None and isinstance(owner[0], ast.ClassDef):
                container = owner[0]  # sibling methods are fair sources too
            break
    if container is None:
        return
    target_text = ctx.render.text(stmt)
    indent = lines.indent_of(stmt.lineno)
    nl = lines.newline
    sources: list[tuple[ast.stmt, str]] = []
    for other in ast.walk(container):
        if not isinstance(other, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Expr):
            continue
        if isinstance(other, ast.Expr) and not isinstance(other.value, ast.Call):
            continue
        if isinstance(other, ast.AnnAssign) and other.value is None:
            continue
        if other.lineno != other.end_lineno:
            continue
        text = ctx.render.text(other)
        if text == target_text or text in (t for _, t in sources):
            continue
        sources.append((other, text))
    sources.sort(key=lambda pair: abs(pair[0].lineno - stmt.lineno))
    # Nothing after a jump statement would ever run.
    jump = isinstance(stmt, ast.Return | ast.Raise | ast.Continue | ast.Break)
    after_ok = not is_compound(stmt) and not jump and lines.ends_line(end)
    last_line = stmt.end_lineno or stmt.lineno
    for other, text in sources[:_INSERT_SOURCE_CAP]:
        positions: list[tuple[int, int, str, str]] = [
            (
                lines.line_start(first_line(stmt)),
                index,
                f"{indent}{text}{nl}",
                f"before line {stmt.lineno}",
            )
        ]
        if after_ok:
            at = lines.next_line_start(last_line)
            lead = "" if lines.has_line_break(last_line) else nl
            trail = nl if lines.has_line_break(last_line) else ""
            positions.append((at, index + 1, f"{lead}{indent}{text}{trail}", f"after line {last_line}"))
        for at, position, insert_text, where in positions:
            copied = copy.deepcopy(other)

            def apply(position: int = position, copied: ast.stmt = copied) -> Callable[[], None]:
                siblings.insert(position, copied)

                def undo() -> None:
                    siblings.pop(position)

                return undo

            description = f"insert `{shorten(text)}` {where}"
            yield Mutation(STMT_INSERT, [[TextEdit(at, at, insert_text)]], apply, [parent], description)


RETURN_VALUE_FAMILY = Family("return_value", "statement", (ast.Return,), (BOOL_FLIP, RETURN_REPLACE), return_value)
STMT_DELETE_FAMILY = Family("stmt_delete", "statement", (ast.stmt,), (STMT_DELETE,), stmt_delete)
STMT_INSERT_FAMILY = Family("stmt_insert", "statement", (ast.stmt,), (STMT_INSERT,), stmt_insert)
