"""Identifier templates: the wrong name, attribute or function, and swapped unpacking targets.

These are the most frequent one-statement fixes in the bug-fix studies; the alternatives come from
what the file itself binds and uses, so only like is swapped for like (values for values, functions
for functions, classes for classes).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import weakref
from collections.abc import Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.analysis import IMPLICIT_NAMES, FileFacts
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

NAME_REPLACE = Template("name_replace", 0.90, "change identifier used")
TARGET_SWAP = Template("target_swap", 0.76, "the arg_swap slip on the binding side: `for x, i in enumerate(xs)`")
SIBLING_CALL = Template("sibling_call", 0.74, "wrong function name (min/max, any/all, ...)")
ATTRIBUTE_REPLACE = Template("attribute_replace", 0.66, "change attribute used")
# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced none of their 331 code hunks, so it has the smoothed floor; it only fires on a name bound nowhere,
# so it never crowds a line.
UNBOUND_NAME = Template("unbound_name", 0.099, "a name bound nowhere (a NameError) -> the in-scope name it slips from")

# Bounds that keep the candidate count in the tens-to-low-hundreds per line.
_NAME_CAP = 8
_ATTR_CAP = 8
_UNBOUND_CAP = 4  # spelling neighbours tried for a name bound nowhere
_UNBOUND_NEAREST = 2  # nearest values in scope tried when no name is spelled alike
_SPELLING_CUTOFF = 0.6  # difflib ratio: "lenght" ~ "length", "itme" ~ "item"
# Per file: every name some statement binds, and whether names may appear unseen (star import, globals()).
_BOUND_ANYWHERE: weakref.WeakKeyDictionary[FileFacts, tuple[set[str], bool]] = weakref.WeakKeyDictionary()

# Functions and methods commonly confused with one another.
SIBLINGS: dict[str, tuple[str, ...]] = {
    "any": ("all",),
    "all": ("any",),
    "min": ("max",),
    "max": ("min",),
    "append": ("extend",),
    "extend": ("append",),
    "sorted": ("reversed",),
    "reversed": ("sorted",),
    "startswith": ("endswith",),
    "endswith": ("startswith",),
    "lower": ("upper",),
    "upper": ("lower",),
    "islower": ("isupper",),
    "isupper": ("islower",),
    "keys": ("values", "items"),
    "values": ("keys", "items"),
    "items": ("keys", "values"),
    "pop": ("get",),
    "get": ("pop",),
    "remove": ("discard",),
    "discard": ("remove",),
    "find": ("index", "rfind"),
    "rfind": ("find",),
    "index": ("find",),
    "floor": ("ceil",),
    "ceil": ("floor",),
    "strip": ("lstrip", "rstrip"),
    "lstrip": ("strip", "rstrip"),
    "rstrip": ("strip", "lstrip"),
    "split": ("rsplit",),
    "rsplit": ("split",),
}


def _callable_pool(facts: FileFacts, node: ast.Name, kind: str) -> list[str]:
    """Functions for a function, classes for a class (exceptions for an exception)."""
    chain = facts.scope_chain(node)
    pool: list[str] = []
    skip = {node.id, *SIBLINGS.get(node.id, ())}  # sibling_call proposes those, better labelled
    for scope in chain:
        for name, binding in facts.bindings_of(scope).items():
            if binding.kind == kind and name not in skip and name not in pool:
                pool.append(name)
    builtin_names = facts.used_builtins[kind]
    original = getattr(builtins, node.id, None)
    if isinstance(original, type) and issubclass(original, BaseException):
        builtin_names = [n for n in builtin_names if issubclass(getattr(builtins, n), BaseException)]
    for name in builtin_names:
        if name not in skip and name not in pool:
            pool.append(name)
    return pool


def name_replace(ctx: Context, node: ast.Name) -> Iterator[Mutation | None]:
    """A used name -> another of its kind in scope, nearest first."""
    facts = ctx.facts
    if not isinstance(node.ctx, ast.Load):
        return  # only uses: binding a different name would also change every later use
    chain = facts.scope_chain(node)
    kind = facts.kind(node.id, chain)
    if node.id in IMPLICIT_NAMES or kind in (None, "module", "builtin"):
        return  # a name bound nowhere (kind None) is unbound_name's: its alternatives are spelling neighbours
    if kind in ("callable", "class"):
        pool = _callable_pool(facts, node, kind)
    elif facts.is_call_func(node):
        return  # a value called like a function (callback): other values are not callables
    else:
        pool = facts.value_pool(node, exclude=node.id)
    for name in pool[:_NAME_CAP]:
        yield ctx.render.replace(NAME_REPLACE, node, ast.Name(id=name, ctx=ast.Load()), name)


def _binds_anywhere(facts: FileFacts, name: str) -> bool:
    """Is `name` bound by any statement of the file, or could a star import or `globals()` bind it?"""
    cached = _BOUND_ANYWHERE.get(facts)
    if cached is None:
        bound: set[str] = set()
        opaque = False  # names appear from a star import or a write to globals(): nothing is "unbound"
        for sub in ast.walk(facts.tree):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                bound.add(sub.id)
            elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(sub.name)
            elif isinstance(sub, ast.arg):
                bound.add(sub.arg)
            elif isinstance(sub, ast.Import | ast.ImportFrom):
                for alias in sub.names:
                    opaque = opaque or alias.name == "*"
                    bound.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(sub, ast.Global | ast.Nonlocal):
                bound.update(sub.names)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("globals", "vars"):
                opaque = True
            elif isinstance(sub, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and sub.name:
                bound.add(sub.name)
        cached = _BOUND_ANYWHERE[facts] = (bound, opaque)
    bound, opaque = cached
    return opaque or name in bound


def unbound_name(ctx: Context, node: ast.Name) -> Iterator[Mutation | None]:
    """A name no scope binds and no builtin provides (it raises NameError) -> a name in scope:
    the ones spelled alike first, else the nearest values."""
    facts = ctx.facts
    if not isinstance(node.ctx, ast.Load) or node.id.startswith("__"):
        return  # dunders such as __file__ are module attributes the interpreter provides
    chain = facts.scope_chain(node)
    if facts.kind(node.id, chain) is not None or _binds_anywhere(facts, node.id):
        return
    called = facts.is_call_func(node)
    visible: list[str] = []
    for scope in chain:
        for name, binding in facts.bindings_of(scope).items():
            if called == (binding.kind in ("callable", "class")) and name not in visible:
                visible.append(name)
    if called:
        visible += [n for n in dir(builtins) if not n.startswith("_") and callable(getattr(builtins, n))]
    ranked = difflib.get_close_matches(node.id, visible, n=_UNBOUND_CAP, cutoff=_SPELLING_CUTOFF)
    if not ranked and not called:
        ranked = facts.value_pool(node, exclude=node.id)[:_UNBOUND_NEAREST]
    for name in ranked:
        yield ctx.render.replace(UNBOUND_NAME, node, ast.Name(id=name, ctx=ast.Load()), name)


def _class_methods(facts: FileFacts, node: ast.AST) -> list[str]:
    """Methods of the class enclosing `node`: `self.<wrong>()` often means one of them."""
    for ancestor in facts.ancestors(node):
        if isinstance(ancestor, ast.ClassDef):
            return [
                s.name
                for s in ancestor.body
                if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and not s.name.startswith("__")
            ]
    return []


def attribute_replace(ctx: Context, node: ast.Attribute) -> Iterator[Mutation | None]:
    """`obj.a` -> `obj.b`: attributes seen on the same name first, then the file's most used."""
    facts, source = ctx.facts, ctx.facts.source
    if isinstance(node.value, ast.Constant):
        return  # `"sep".join`: other names used on other objects make no sense on a literal
    is_call = facts.is_call_func(node)
    pool: list[str] = []
    if isinstance(node.value, ast.Name):
        pool.extend(facts.attrs_by_base.get((node.value.id, is_call), []))
        if node.value.id == "self" and is_call:
            pool.extend(_class_methods(facts, node))
    pool.extend(facts.attr_pool[is_call])
    end = facts.lines.span(node)[1]
    count = 0
    for attr in dict.fromkeys(pool):
        if attr == node.attr or attr.startswith("__") or count >= _ATTR_CAP:
            continue
        if is_call and attr in SIBLINGS.get(node.attr, ()):
            continue  # proposed by sibling_call
        new = ast.Attribute(value=node.value, attr=attr, ctx=node.ctx)
        preferred = []
        if source[end - len(node.attr) : end] == node.attr:
            preferred.append([TextEdit(end - len(node.attr), end, attr)])
        count += 1
        yield ctx.render.replace(ATTRIBUTE_REPLACE, node, new, preferred=preferred)


def sibling_call(ctx: Context, node: ast.Call) -> Iterator[Mutation | None]:
    """`min(...)` -> `max(...)`, `.keys()` -> `.values()`, ...: a function confused with its sibling."""
    func = node.func
    if isinstance(func, ast.Name):
        for other in SIBLINGS.get(func.id, ()):
            yield ctx.render.replace(SIBLING_CALL, func, ast.Name(id=other, ctx=ast.Load()), other)
    elif isinstance(func, ast.Attribute):
        source = ctx.facts.source
        end = ctx.facts.lines.span(func)[1]
        for other in SIBLINGS.get(func.attr, ()):
            new = ast.Attribute(value=func.value, attr=other, ctx=ast.Load())
            preferred = []
            if source[end - len(func.attr) : end] == func.attr:
                preferred.append([TextEdit(end - len(func.attr), end, other)])
            yield ctx.render.replace(SIBLING_CALL, func, new, preferred=preferred)


def target_swap(ctx: Context, node: ast.List | ast.Tuple) -> Iterator[Mutation | None]:
    """Swap two neighbouring unpacking targets (`i, x = ...` for `x, i = ...`)."""
    if not isinstance(node.ctx, ast.Store):
        return
    lines, render = ctx.facts.lines, ctx.render
    for i in range(len(node.elts) - 1):
        a, b = node.elts[i], node.elts[i + 1]
        if isinstance(a, ast.Starred) or isinstance(b, ast.Starred):
            continue
        elts = list(node.elts)
        elts[i], elts[i + 1] = b, a
        (sa, ea), (sb, eb) = lines.span(a), lines.span(b)
        edits = [TextEdit(sa, ea, render.text(b)), TextEdit(sb, eb, render.text(a))]
        new = type(node)(elts=elts, ctx=ast.Store())
        yield render.replace(TARGET_SWAP, node, new, preferred=[edits])


NAME_REPLACE_FAMILY = Family("name_replace", "expression", (ast.Name,), (NAME_REPLACE,), name_replace)
UNBOUND_NAME_FAMILY = Family("unbound_name", "expression", (ast.Name,), (UNBOUND_NAME,), unbound_name)
ATTRIBUTE_REPLACE_FAMILY = Family(
    "attribute_replace", "expression", (ast.Attribute,), (ATTRIBUTE_REPLACE,), attribute_replace
)
SIBLING_CALL_FAMILY = Family("sibling_call", "expression", (ast.Call,), (SIBLING_CALL,), sibling_call)
TARGET_SWAP_FAMILY: Family[ast.List | ast.Tuple] = Family(
    "target_swap", "expression", (ast.List, ast.Tuple), (TARGET_SWAP,), target_swap
)
