"""Callee signatures, read from the project's source: the definition a call reaches, in the same
file (a function, a class's `__init__`, a method of the enclosing class through `self`) or in the
project file an import names. Only what the source states is used; nothing is imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from selfix_action.offline.templates.analysis import FileFacts
from selfix_action.offline.templates.hints import Hints

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Signature:
    """The parameters a call can pass, with the bound `self`/`cls` already dropped."""

    positional: tuple[ast.arg, ...]  # positional-or-keyword (and positional-only) in order
    positional_only: int  # how many of `positional` cannot be passed by keyword
    defaults: tuple[ast.expr | None, ...]  # per positional: its default or None
    keyword_only: tuple[ast.arg, ...]
    keyword_defaults: tuple[ast.expr | None, ...]
    varargs: bool
    varkw: bool

    @classmethod
    def of(cls, func: Function, bound: bool) -> Signature:
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        posonly = len(args.posonlyargs)
        if bound and positional:
            positional, defaults = positional[1:], defaults[1:]
            posonly = max(0, posonly - 1)
        return cls(
            tuple(positional),
            posonly,
            tuple(defaults),
            tuple(args.kwonlyargs),
            tuple(args.kw_defaults),
            args.vararg is not None,
            args.kwarg is not None,
        )

    def keyword_names(self) -> list[tuple[str, ast.expr | None]]:
        """Parameters a call may pass by keyword, with their defaults."""
        named = list(zip(self.positional, self.defaults, strict=True))[self.positional_only :]
        named += list(zip(self.keyword_only, self.keyword_defaults, strict=True))
        return [(arg.arg, default) for arg, default in named]

    def accepts(self, call: ast.Call) -> bool:
        """Could `call`'s arguments bind to these parameters (counts and names only)?"""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return True  # unpacked arguments: any arity may fit
        given = len(call.args)
        if given > len(self.positional) and not self.varargs:
            return False
        names = {name for name, _ in self.keyword_names()}
        passed = {arg.arg for arg in self.positional[:given]}
        for keyword in call.keywords:
            if keyword.arg in passed or (keyword.arg not in names and not self.varkw):
                return False
            passed.add(keyword.arg or "")
        required = [a.arg for a, d in zip(self.positional, self.defaults, strict=True) if d is None]
        required += [a.arg for a, d in zip(self.keyword_only, self.keyword_defaults, strict=True) if d is None]
        return all(name in passed for name in required)


def _decorators(func: Function) -> set[str]:
    names = set()
    for decorator in func.decorator_list:
        if isinstance(decorator, ast.Name):
            names.add(decorator.id)
        elif isinstance(decorator, ast.Attribute):
            names.add(decorator.attr)
    return names


def method_signature(func: Function) -> Signature | None:
    """A method's signature as called on an instance; None for a property (not called)."""
    decorators = _decorators(func)
    if "property" in decorators or "setter" in decorators:
        return None
    return Signature.of(func, bound="staticmethod" not in decorators)


def _top_level(tree: ast.Module, name: str) -> Signature | None:
    """The signature of the module-level function or class `name` (its `__init__`) in `tree`."""
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
            return Signature.of(stmt, bound=False)
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            init = class_methods(tree, stmt).get("__init__")
            return Signature.of(init, bound=True) if init is not None else None
    return None


def class_methods(tree: ast.Module, cls: ast.ClassDef) -> dict[str, Function]:
    """Methods of `cls` and of its bases defined in the same module (the class's own win)."""
    methods: dict[str, Function] = {}
    classes = {stmt.name: stmt for stmt in tree.body if isinstance(stmt, ast.ClassDef)}
    todo, seen = [cls], set()
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        for stmt in current.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                methods.setdefault(stmt.name, stmt)
        todo += [classes[b.id] for b in current.bases if isinstance(b, ast.Name) and b.id in classes]
    return methods


def enclosing_class(facts: FileFacts, node: ast.AST) -> tuple[ast.ClassDef, Function] | None:
    """The class whose method contains `node`, and that method (the innermost function's class)."""
    for ancestor in facts.ancestors(node):
        if isinstance(ancestor, ast.FunctionDef | ast.AsyncFunctionDef):
            owner = facts.slot(ancestor)
            if owner is not None and isinstance(owner[0], ast.ClassDef):
                return owner[0], ancestor
            return None
        if isinstance(ancestor, ast.Lambda):
            continue
    return None


def _imported(facts: FileFacts, name: str) -> ast.ImportFrom | ast.Import | None:
    for stmt in facts.tree.body:
        if isinstance(stmt, ast.ImportFrom | ast.Import):
            for alias in stmt.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    return stmt
    return None


def callee_signature(facts: FileFacts, hints: Hints, call: ast.Call) -> Signature | None:
    """The signature of what `call` calls, when the project's source shows it unambiguously."""
    func = call.func
    if isinstance(func, ast.Name):
        local = _top_level(facts.tree, func.id)
        if local is not None:
            return local
        stmt = _imported(facts, func.id)
        if isinstance(stmt, ast.ImportFrom):
            alias = next(a for a in stmt.names if (a.asname or a.name) == func.id)
            path = hints.module_path(facts.path, stmt.module, stmt.level)
            tree = hints.tree(path) if path else None
            return _top_level(tree, alias.name) if tree is not None else None
        return None
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return None
    base = func.value.id
    owner = enclosing_class(facts, call)
    if owner is not None and base in ("self", "cls"):
        method = class_methods(facts.tree, owner[0]).get(func.attr)
        return method_signature(method) if method is not None else None
    stmt = _imported(facts, base)
    if stmt is not None:  # `mod.f(...)` with `import pkg.mod as mod` or `from pkg import mod`
        if isinstance(stmt, ast.Import):
            alias = next(a for a in stmt.names if (a.asname or a.name.split(".")[0]) == base)
            module = alias.name if alias.asname else base
            path = hints.module_path(facts.path, module, 0)
        else:
            alias = next(a for a in stmt.names if (a.asname or a.name) == base)
            module = f"{stmt.module}.{alias.name}" if stmt.module else alias.name
            path = hints.module_path(facts.path, module, stmt.level)
        tree = hints.tree(path) if path else None
        return _top_level(tree, func.attr) if tree is not None else None
    # `obj.m(...)`: a method name only one class of the file defines.
    found = [
        m
        for cls in ast.walk(facts.tree)
        if isinstance(cls, ast.ClassDef)
        for m in cls.body
        if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name == func.attr
    ]
    return method_signature(found[0]) if len(found) == 1 else None
