"""File-wide facts the templates consult: where every node sits in its parent, which names each scope
binds (and of what kind, so only like is swapped for like), and the pools of names, attributes and
literals a file already uses, which are the plausible replacements for a wrong one.

Everything here is computed once per file and only read afterwards; nothing renders or edits text.
"""

from __future__ import annotations

import ast
import builtins
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from selfix_action.offline.spans import LineMap

# `self`/`cls` are bound by convention, never a wrong choice among other values.
IMPLICIT_NAMES = {"self", "cls"}
# Operator / context singletons are shared between nodes, so they cannot have a parent slot.
NO_SLOT = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)
FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMP_TYPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPE_TYPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)

# Where a node sits: (parent, field name, index in that field's list or None for a plain field).
Slot = tuple[ast.AST, str, int | None]


# ------------------------------------------------------------------------------ AST shapes
def first_line(node: ast.AST) -> int:
    """First line of a statement, decorators included."""
    lines = [node.lineno]  # type: ignore[attr-defined]
    for decorator in getattr(node, "decorator_list", ()):
        lines.append(decorator.lineno)
    return min(lines)


def is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def is_compound(node: ast.AST) -> bool:
    """Statements with nested blocks: only their header is a mutation target."""
    return isinstance(node, ast.stmt) and any(
        isinstance(getattr(node, name, None), list) for name in ("body", "cases", "handlers")
    )


def is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def header_roots(stmt: ast.stmt) -> list[ast.expr]:
    """Expressions in a compound statement's header (never its body)."""
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        defaults = [d for d in stmt.args.kw_defaults if d is not None]
        return [*stmt.decorator_list, *stmt.args.defaults, *defaults]
    if isinstance(stmt, ast.ClassDef):
        return [*stmt.decorator_list, *stmt.bases, *(kw.value for kw in stmt.keywords)]
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    return []


# -------------------------------------------------------------------------- scopes and bindings
def _scope_children(scope: ast.AST) -> list[ast.AST]:
    """The nodes evaluated *inside* a scope (not its decorators/defaults, which belong outside)."""
    if isinstance(scope, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return list(scope.body)
    if isinstance(scope, ast.Lambda):
        return [scope.body]
    if isinstance(scope, ast.DictComp):
        return [scope.key, scope.value, *scope.generators]
    if isinstance(scope, ast.ListComp | ast.SetComp | ast.GeneratorExp):
        return [scope.elt, *scope.generators]
    return []


def _walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """Walk a scope's own nodes; nested scopes are yielded but not entered."""
    stack = list(reversed(_scope_children(scope)))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPE_TYPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


@dataclass
class Binding:
    kind: str  # "value" | "callable" (functions) | "class" | "module"
    line: int


def scope_bindings(scope: ast.AST, called: set[str]) -> dict[str, Binding]:
    """Names bound in a scope with a coarse kind, so we only swap like for like."""
    out: dict[str, Binding] = {}

    def bind(name: str, kind: str, line: int) -> None:
        if name not in out:
            out[name] = Binding(kind, line)

    if isinstance(scope, FUNC_TYPES):
        args = scope.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        for arg in every:
            if arg is not None:
                bind(arg.arg, "value", scope.lineno)
    if isinstance(scope, COMP_TYPES):
        for generator in scope.generators:
            for node in ast.walk(generator.target):
                if isinstance(node, ast.Name):
                    bind(node.id, "value", node.lineno)
    for node in _walk_scope(scope):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bind(node.id, "value", node.lineno)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            bind(node.name, "callable", node.lineno)
        elif isinstance(node, ast.ClassDef):
            bind(node.name, "class", node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bind(alias.asname or alias.name.split(".")[0], "module", node.lineno)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                name = alias.asname or alias.name
                # Imported objects are opaque: CapWords are classes by convention.
                if name[:1].isupper() and not name.isupper():
                    kind = "class"
                else:
                    kind = "callable" if name in called else "value"
                bind(name, kind, node.lineno)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name, "value", node.lineno)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bind(node.name, "value", node.lineno)
    return out


# ------------------------------------------------------------------------------- the facts
class FileFacts:
    """What the templates may ask about one parsed file."""

    def __init__(self, source: str, path: str, tree: ast.Module) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        self.lines = LineMap(source)
        self.parents: dict[int, Slot] = {}
        for parent in ast.walk(tree):
            for name, value in ast.iter_fields(parent):
                if isinstance(value, list):
                    for index, item in enumerate(value):
                        if isinstance(item, ast.AST) and not isinstance(item, NO_SLOT):
                            self.parents[id(item)] = (parent, name, index)
                elif isinstance(value, ast.AST) and not isinstance(value, NO_SLOT):
                    self.parents[id(value)] = (parent, name, None)
        self.statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
        self.statements.sort(key=lambda s: (s.lineno, s.col_offset))
        self._analyse()

    def _analyse(self) -> None:
        tree = self.tree
        called: set[str] = set()
        loaded: set[str] = set()
        str_counts: Counter[str] = Counter()
        int_counts: Counter[int] = Counter()
        attr_counts: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
        # Attributes seen on each (base name, used as a call?), in first-use order.
        self.attrs_by_base: dict[tuple[str, bool], list[str]] = {}
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                loaded.add(node.id)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called.add(node.func.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Name):
                        called.add(decorator.id)
            elif isinstance(node, ast.Constant) and id(node) not in docstrings:
                if isinstance(node.value, str) and len(node.value) <= 30:
                    str_counts[node.value] += 1
                elif type(node.value) is int:
                    int_counts[node.value] += 1
            elif isinstance(node, ast.Attribute) and not node.attr.startswith("__"):
                is_call = self.is_call_func(node)
                attr_counts[is_call][node.attr] += 1
                if isinstance(node.value, ast.Name):
                    bucket = self.attrs_by_base.setdefault((node.value.id, is_call), [])
                    if node.attr not in bucket:
                        bucket.append(node.attr)
        self.called = called
        # Literals and attributes the file uses, most frequent first.
        self.str_pool = [value for value, _ in str_counts.most_common()]
        self.int_pool = [value for value, _ in int_counts.most_common()]
        self.attr_pool = {kind: [a for a, _ in counts.most_common()] for kind, counts in attr_counts.items()}
        self.bindings: dict[int, dict[str, Binding]] = {id(tree): scope_bindings(tree, called)}
        module_bound = self.bindings[id(tree)]
        # Builtins the file already uses are the plausible "wrong function/class" alternatives.
        self.used_builtins: dict[str, list[str]] = {"callable": [], "class": []}
        for name in sorted(loaded):
            value = getattr(builtins, name, None)
            if name in module_bound or not callable(value):
                continue
            if isinstance(value, type):
                self.used_builtins["class"].append(name)
            elif name in called:
                self.used_builtins["callable"].append(name)

    # ------------------------------------------------------------------------- tree position
    def slot(self, node: ast.AST) -> Slot | None:
        return self.parents.get(id(node))

    def is_call_func(self, node: ast.AST) -> bool:
        """Is `node` the callee of a call (`node(...)`)?"""
        slot = self.parents.get(id(node))
        return slot is not None and isinstance(slot[0], ast.Call) and slot[1] == "func"

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        slot = self.parents.get(id(node))
        while slot is not None:
            yield slot[0]
            slot = self.parents.get(id(slot[0]))

    def enclosing_stmt(self, node: ast.AST) -> ast.stmt | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, ast.stmt):
                return ancestor
        return None

    # ------------------------------------------------------------------------------ scopes
    def scope_chain(self, node: ast.AST) -> list[ast.AST]:
        """Enclosing scopes, innermost first; class bodies only when directly enclosing."""
        chain: list[ast.AST] = []
        seen_function = False
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                if not seen_function:
                    chain.append(ancestor)
                seen_function = True
            elif isinstance(ancestor, (*FUNC_TYPES, *COMP_TYPES)):
                chain.append(ancestor)
                seen_function = seen_function or isinstance(ancestor, FUNC_TYPES)
            elif isinstance(ancestor, ast.Module):
                chain.append(ancestor)
        return chain

    def bindings_of(self, scope: ast.AST) -> dict[str, Binding]:
        key = id(scope)
        if key not in self.bindings:
            self.bindings[key] = scope_bindings(scope, self.called)
        return self.bindings[key]

    def kind(self, name: str, chain: list[ast.AST]) -> str | None:
        """Binding kind of `name` seen from `chain`: a scope's binding, else the builtin's kind."""
        for scope in chain:
            binding = self.bindings_of(scope).get(name)
            if binding is not None:
                return binding.kind
        value = getattr(builtins, name, None)
        if value is not None:
            if isinstance(value, type):
                return "class"
            return "callable" if callable(value) else "builtin"
        return None

    def value_pool(self, node: ast.AST, exclude: str | None = None) -> list[str]:
        """Value names in scope for `node`, nearest first: same statement, locals, module."""
        chain = self.scope_chain(node)
        line = getattr(node, "lineno", 0)
        pool: list[str] = []
        seen = {exclude, *IMPLICIT_NAMES}

        def add(name: str) -> None:
            if name not in seen and not name.startswith("__"):
                seen.add(name)
                pool.append(name)

        stmt = self.enclosing_stmt(node)
        if stmt is not None:
            # Compound statements contribute their header only, not their whole body.
            roots = header_roots(stmt) if is_compound(stmt) else [stmt]
            for root in roots:
                for sub in ast.walk(root):
                    if isinstance(sub, ast.Name) and self.kind(sub.id, chain) == "value":
                        add(sub.id)
        for scope in chain:
            bound = self.bindings_of(scope)
            names = [name for name, b in bound.items() if b.kind == "value"]
            names.sort(key=lambda n: abs(bound[n].line - line))
            for name in names:
                add(name)
        return pool


def parse_source(source: str) -> tuple[str, str, ast.Module] | None:
    """(its UTF-8 byte-order mark or "", the text after it, that text's syntax tree), or None when it does not
    parse. A byte-order mark survives a plain read but is a syntax error in a str: edits are made to the text
    after it and it is put back, so the file keeps its encoding signature."""
    bom = "\ufeff" if source.startswith("\ufeff") else ""
    text = source[len(bom) :]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings of the project's code are not ours to show
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    return bom, text, tree
