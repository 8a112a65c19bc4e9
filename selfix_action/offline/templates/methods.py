"""The sibling-method template: `self.foo(...)` where the class's `bar` was meant. Only methods of
the same class (and its bases in the file) whose signature accepts the call's arguments are tried,
spelled-alike first, so a wrong method name never turns into a call that can only raise TypeError.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.signatures import class_methods, enclosing_class, method_signature
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced none of their 331 code hunks, so it has the smoothed floor, below every hand prior.
SIBLING_METHOD = Template("sibling_method", 0.099, "call another method of the same class with a fitting signature")

_CAP = 4  # sibling methods tried per call


def sibling_method(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """`self.foo(a)` -> `self.bar(a)` for the class's methods whose parameters fit `(a)`."""
    facts = ctx.facts
    func = node.func
    if (
        not isinstance(func, ast.Attribute)
        or not isinstance(func.value, ast.Name)
        or func.value.id not in ("self", "cls")
    ):
        return
    owner = enclosing_class(facts, node)
    if owner is None:
        return
    cls, current = owner
    fitting = []
    for name, method in class_methods(facts.tree, cls).items():
        if name == func.attr or name == current.name or name.startswith("__"):
            continue  # calling the method itself is recursion, not a sibling
        signature = method_signature(method)
        if signature is not None and signature.accepts(node):
            fitting.append(name)
    # Spelled alike first (`_parse_row` for `_parse_rows`), then in the class's order.
    fitting.sort(key=lambda name: -difflib.SequenceMatcher(None, func.attr, name).ratio())
    end = facts.lines.span(func)[1]
    source = facts.source
    for name in fitting[:_CAP]:
        new = ast.Attribute(value=func.value, attr=name, ctx=ast.Load())
        preferred = []
        if source[end - len(func.attr) : end] == func.attr:
            preferred.append([TextEdit(end - len(func.attr), end, name)])
        yield ctx.render.replace(SIBLING_METHOD, func, new, preferred=preferred)


SIBLING_METHOD_FAMILY = Family("sibling_method", "expression", (ast.Call,), (SIBLING_METHOD,), sibling_method)
