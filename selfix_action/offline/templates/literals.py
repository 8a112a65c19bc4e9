"""Literal-to-name template: a literal written where the code meant a named constant with the same
value, such as `':'` for `os.pathsep` or `10` for the module's `MAX_RETRIES`. The value is the same on
this machine, so the edit matters where the name's value differs (another platform, a patched
constant, a test that changes it): the tests tell.

Candidates are only names whose value is known to equal the literal: the file's own constants (a
module- or class-level `NAME = <literal>`) and public string attributes of the few side-effect-free
standard modules the file imports.
"""

from __future__ import annotations

import ast
import functools
import importlib
from collections.abc import Iterator

from selfix_action.offline.templates.analysis import is_docstring
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced none of their 331 code hunks, so it has the smoothed floor, below every hand prior.
LITERAL_TO_NAME = Template("literal_to_name", 0.099, "a literal -> the constant or module attribute of that value")

_CAP = 3  # names tried for one literal
# Standard modules whose import runs no code with effects, and whose string attributes are the
# platform constants code should use instead of literals.
_SAFE_MODULES = frozenset({"os", "posixpath", "ntpath", "sys", "string", "errno", "stat"})


@functools.cache  # the platform's constants do not change during a run
def _module_strings(module: str) -> dict[str, list[str]]:
    """Public string attributes of a safe standard module: value -> attribute names."""
    if module not in _SAFE_MODULES:
        return {}
    found: dict[str, list[str]] = {}
    loaded = importlib.import_module(module)
    for attr in sorted(dir(loaded)):
        value = getattr(loaded, attr, None)
        if not attr.startswith("_") and isinstance(value, str) and value:
            found.setdefault(value, []).append(attr)
    return found


def _constants(body: list[ast.stmt]) -> dict[tuple[type, object], list[tuple[str, ast.stmt]]]:
    """`NAME = <literal>` assignments of a module or class body: (type, value) -> (name, statement)."""
    found: dict[tuple[type, object], list[tuple[str, ast.stmt]]] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and stmt.simple:
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and value.value is not None:
            found.setdefault((type(value.value), value.value), []).append((target.id, stmt))
    return found


def literal_to_name(ctx: Context, node: ast.Constant) -> Iterator[Mutation | None]:
    """A str/int/float literal -> a name or attribute in scope bound to an equal value."""
    facts = ctx.facts
    value = node.value
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
        return
    slot = facts.slot(node)
    stmt = facts.enclosing_stmt(node)
    if slot is None or stmt is None or is_docstring(stmt) or isinstance(slot[0], ast.JoinedStr):
        return
    key = (type(value), value)
    chain = facts.scope_chain(node)
    names: list[ast.expr] = []
    # The enclosing class's constants, through `self` in its methods (the class body itself uses the bare name).
    for scope in chain:
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            owner = facts.slot(scope)
            args = scope.args.posonlyargs + scope.args.args
            if owner is not None and isinstance(owner[0], ast.ClassDef) and args and args[0].arg in ("self", "cls"):
                for name, where in _constants(owner[0].body).get(key, []):
                    if where is not stmt:
                        names.append(
                            ast.Attribute(value=ast.Name(id=args[0].arg, ctx=ast.Load()), attr=name, ctx=ast.Load())
                        )
            break
    for name, where in _constants(facts.tree.body).get(key, []):
        if where is not stmt and facts.kind(name, chain) == "value":
            names.append(ast.Name(id=name, ctx=ast.Load()))
    if isinstance(value, str):
        for top in facts.tree.body:
            if isinstance(top, ast.Import):
                for alias in top.names:
                    if "." not in alias.name:
                        bound = alias.asname or alias.name
                        for attr in _module_strings(alias.name).get(value, []):
                            names.append(
                                ast.Attribute(value=ast.Name(id=bound, ctx=ast.Load()), attr=attr, ctx=ast.Load())
                            )
            elif isinstance(top, ast.ImportFrom) and top.module and not top.level:
                for alias in top.names:
                    if alias.name in _module_strings(top.module).get(value, []):
                        names.append(ast.Name(id=alias.asname or alias.name, ctx=ast.Load()))
    seen: set[str] = set()
    for new in names:
        text = ast.unparse(new)
        if text in seen:
            continue
        seen.add(text)
        if len(seen) > _CAP:
            return
        yield ctx.render.replace(LITERAL_TO_NAME, node, new, text)


LITERAL_TO_NAME_FAMILY = Family("literal_to_name", "expression", (ast.Constant,), (LITERAL_TO_NAME,), literal_to_name)
