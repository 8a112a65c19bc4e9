"""The missing-keyword template: a call that leaves out a keyword argument its callee accepts
(`load(path)` where the fix is `load(path, strict=strict)`). The callee's signature comes from the
project's source (`signatures`); the values tried are a name in scope spelled like the parameter,
and for a boolean default its opposite.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.signatures import callee_signature
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced none of their 331 code hunks, so it has the smoothed floor, below every hand prior.
KEYWORD_ADD = Template("keyword_add", 0.099, "pass a keyword argument the callee accepts but the call omits")

_CAP = 4  # keyword arguments tried per call
_SPELLING_CUTOFF = 0.75  # `time_out` for `timeout`, not `name` for `mode`


def keyword_add(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """`f(a)` -> `f(a, key=key)` / `f(a, flag=True)` for the callee's parameters the call does not pass."""
    facts = ctx.facts
    if any(k.arg is None for k in node.keywords):
        return  # `**options` may pass any of them already
    signature = callee_signature(facts, ctx.hints, node)
    if signature is None:
        return
    passed = {arg.arg for arg in signature.positional[: len(node.args)]} | {k.arg for k in node.keywords}
    if any(isinstance(a, ast.Starred) for a in node.args):
        passed |= {arg.arg for arg in signature.positional}  # `*args` fills the positional ones
    pool = facts.value_pool(node)
    items: list[ast.AST] = [*node.args, *node.keywords]
    lines = facts.lines
    at = max(lines.span(item)[1] for item in items) if items else lines.span(node)[1] - 1
    count = 0
    for name, default in signature.keyword_names():
        if name in passed or name.startswith("_"):
            continue
        values: list[tuple[str, ast.expr]] = []
        if name in pool:
            values.append((name, ast.Name(id=name, ctx=ast.Load())))
        else:
            for close in difflib.get_close_matches(name, pool, n=1, cutoff=_SPELLING_CUTOFF):
                values.append((close, ast.Name(id=close, ctx=ast.Load())))
        if isinstance(default, ast.Constant) and isinstance(default.value, bool):
            values.append((str(not default.value), ast.Constant(value=not default.value)))
        for text, value in values:
            if count >= _CAP:
                return
            count += 1
            keyword = ast.keyword(arg=name, value=value)
            new = ast.Call(func=node.func, args=node.args, keywords=[*node.keywords, keyword])
            insert = f", {name}={text}" if items else f"{name}={text}"
            yield ctx.render.replace(KEYWORD_ADD, node, new, preferred=[[TextEdit(at, at, insert)]])


KEYWORD_ADD_FAMILY = Family("keyword_add", "expression", (ast.Call,), (KEYWORD_ADD,), keyword_add)
