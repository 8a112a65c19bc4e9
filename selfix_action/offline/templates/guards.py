"""The missing-guard template: a function that should give up early on a `None` or empty value
(`if x is None: return None`, `if not x: return x`, `if not x: return []`), guarded at the top of
the function (for a parameter) or right before the suspicious statement (for any value it uses).

The guarded names are the values the suspicious statement reads; the empty value returned is the
one the function's own returns suggest (a list, dict, str, ...), so the guard returns what callers
already get back from it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.analysis import IMPLICIT_NAMES, first_line, header_roots, is_compound, is_docstring
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced none of their 331 code hunks, so it has the smoothed floor, below every hand prior.
NONE_GUARD = Template("none_guard", 0.099, "return early when a value is None or empty")

_GUARDED_CAP = 2  # names of the suspicious statement guarded

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _empty_return(func: Function) -> tuple[str, ast.expr] | None:
    """The empty value of the kind the function returns elsewhere (`[]`, `{}`, `''`, `()`), if one kind."""
    kinds: set[str] = set()
    for sub in ast.walk(func):
        if isinstance(sub, ast.Return) and sub.value is not None:
            value = sub.value
            if isinstance(value, ast.List | ast.ListComp):
                kinds.add("[]")
            elif isinstance(value, ast.Dict | ast.DictComp):
                kinds.add("{}")
            elif isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                kinds.add("''")
            elif isinstance(value, ast.Tuple):
                kinds.add("()")
    if len(kinds) != 1:
        return None
    text = kinds.pop()
    node = {
        "[]": ast.List(elts=[], ctx=ast.Load()),
        "{}": ast.Dict(keys=[], values=[]),
        "()": ast.Tuple(elts=[], ctx=ast.Load()),
    }.get(text, ast.Constant(value=""))
    return text, node


def _read_names(stmt: ast.stmt) -> list[str]:
    """Names the statement reads (its header only for a compound statement), in order."""
    roots: list[ast.AST] = list(header_roots(stmt)) if is_compound(stmt) else [stmt]
    names: list[str] = []
    for root in roots:
        for sub in ast.walk(root):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in names:
                names.append(sub.id)
    return names


def none_guard(ctx: Context, stmt: ast.stmt) -> Iterator[Mutation | None]:
    """`if x is None: return None` (and the empty-value variants) before `stmt` and at the top of its function."""
    facts, lines = ctx.facts, ctx.facts.lines
    slot = facts.slot(stmt)
    if slot is None or slot[2] is None or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    func = next(
        (
            a
            for a in facts.ancestors(stmt)
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef)
        ),
        None,
    )
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
        return  # module and class bodies have nothing to return from; a lambda has no statements
    if not lines.starts_line(lines.span(stmt)[0]) or stmt.lineno == func.lineno:
        return
    if isinstance(stmt, ast.If) and lines.line_text(stmt.lineno).lstrip().startswith("elif"):
        return  # nothing can go between an `elif` and its `if`
    generator = any(isinstance(sub, ast.Yield | ast.YieldFrom) for sub in ast.walk(func))
    bound = facts.bindings_of(func)
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    guarded = [
        name
        for name in _read_names(stmt)
        if name not in IMPLICIT_NAMES and name in bound and bound[name].kind == "value"
    ][:_GUARDED_CAP]
    if not guarded:
        return
    empty = None if generator or func.name == "__init__" else _empty_return(func)
    first = 1 if is_docstring(func.body[0]) and len(func.body) > 1 else 0
    top = func.body[first]
    places: list[tuple[ast.stmt, list[ast.stmt], int]] = [(stmt, getattr(slot[0], slot[1]), slot[2])]
    if top is not stmt and lines.starts_line(lines.span(top)[0]) and top.lineno != func.lineno:
        places.append((top, func.body, first))
    def_indent = lines.indent_of(func.lineno)
    body_indent = lines.indent_of(func.body[0].lineno)
    unit = body_indent[len(def_indent) :] if len(body_indent) > len(def_indent) else "    "
    nl = lines.newline
    for anchor, siblings, index in places:
        at_top = anchor is top
        indent = lines.indent_of(anchor.lineno)
        for name in guarded:
            if at_top and name not in params:
                continue  # at the top of the function only a parameter has a value to test
            choices: list[tuple[str, ast.expr, str, ast.expr | None]] = []
            is_none = ast.Compare(
                left=ast.Name(id=name, ctx=ast.Load()), ops=[ast.Is()], comparators=[ast.Constant(value=None)]
            )
            falsy = ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=name, ctx=ast.Load()))
            if generator or func.name == "__init__":
                choices.append((f"{name} is None", is_none, "return", None))
            else:
                choices.append((f"{name} is None", is_none, "return None", ast.Constant(value=None)))
                # An empty value: what the function returns for one elsewhere, else the value itself.
                if empty is not None:
                    choices.append((f"not {name}", falsy, f"return {empty[0]}", empty[1]))
                else:
                    choices.append((f"not {name}", falsy, f"return {name}", ast.Name(id=name, ctx=ast.Load())))
            for test_text, test, ret_text, ret_value in choices:
                at = lines.line_start(first_line(anchor))
                text = f"{indent}if {test_text}:{nl}{indent}{unit}{ret_text}{nl}"
                guard = ast.If(test=test, body=[ast.Return(value=ret_value)], orelse=[])

                def apply(
                    siblings: list[ast.stmt] = siblings, index: int = index, guard: ast.If = guard
                ) -> Callable[[], None]:
                    siblings.insert(index, guard)

                    def undo() -> None:
                        siblings.pop(index)

                    return undo

                where = "at the top of the function" if at_top else f"before line {anchor.lineno}"
                description = f"insert `if {test_text}: {ret_text}` {where}"
                parent = facts.slot(anchor)
                sites = [parent[0]] if parent is not None else []
                yield Mutation(NONE_GUARD, [[TextEdit(at, at, text)]], apply, sites, description)


NONE_GUARD_FAMILY = Family("none_guard", "statement", (ast.stmt,), (NONE_GUARD,), none_guard)
