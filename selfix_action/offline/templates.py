"""Repair templates: AST mutations that propose one-statement fixes at suspicious lines.

Each candidate is rendered as a *minimal text edit* of the original file (only the mutated span
changes, so comments, spacing and line endings survive), then verified: the edited text must
parse to exactly the AST we meant to build. If the compact rendering does not round-trip (for
example an operand needs parentheses), we fall back to `ast.unparse` of the new node, with and
without parentheses, and drop the candidate when nothing round-trips.

The template set follows studies of single-statement bug fixes (ManySStuBs4J, PySStuBs,
TSSB-3M): identifier, operand, argument, function-name and attribute changes are the most
frequent fix kinds; operator, literal and off-by-one changes are rarer but cheap and precise.
"""

from __future__ import annotations

import ast
import builtins
import copy
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from selfix_action.offline.spans import (
    IncrementalDump,
    LineMap,
    TextEdit,
    change_size,
    operator_span,
    shorten,
)

__all__ = ["PRIORS", "SourceEdit", "candidate_edits"]


@dataclass(frozen=True)
class SourceEdit:
    path: str  # repo-relative posix path (passed in, echoed back)
    template: str  # template id, e.g. "binop_replace", "off_by_one", "mutable_default"
    description: str  # human text, e.g. "line 4: replace `total // count` with `total / count`"
    line: int  # 1-based first line changed
    prior: float  # template prior in (0, 1]: higher = fixes real one-statement bugs more often
    new_source: str  # the whole file's new text; identical to the original outside the edited span(s)
    normalized: str  # ast.dump(ast.parse(new_source)) so equivalent edits can be deduplicated


# Hand-set priors that follow the frequency ordering of the one-statement-bug studies above
# (most frequent fix kind first). They rank *kinds* of edit, not individual candidates.
PRIORS: dict[str, float] = {
    "name_replace": 0.90,  # change identifier used
    "operand_replace": 0.85,  # change binary operand
    "arg_add": 0.80,  # same function, more args
    "arg_drop": 0.78,  # same function, fewer args
    "arg_swap": 0.76,  # same function, swap args
    "target_swap": 0.76,  # the same slip on the binding side: `for x, i in enumerate(xs)`
    "sibling_call": 0.74,  # wrong function name (min/max, any/all, ...)
    "wrap_call": 0.70,  # add function around expression
    "unwrap_call": 0.68,  # remove function around expression
    "attribute_replace": 0.66,  # change attribute used
    "literal_tweak": 0.62,  # change numeric literal
    "condition_narrow": 0.60,  # more specific if
    "condition_widen": 0.58,  # less specific if
    "condition_negate": 0.56,
    "iterable_add": 0.52,  # add elements to iterable
    "bool_flip": 0.50,  # change boolean literal (and None <-> bool on return)
    "binop_replace": 0.48,  # change binary operator (incl. augmented assignment, // <-> /)
    "compare_replace": 0.48,  # change comparison operator
    "boolop_replace": 0.46,
    "unary_replace": 0.44,  # change unary operator
    "off_by_one": 0.42,  # index / range / slice bounds
    "slice_add": 0.36,
    "mutable_default": 0.32,
    "stmt_insert": 0.28,
    "stmt_delete": 0.24,
    "return_replace": 0.20,
}

# Bounds that keep the candidate count in the tens-to-low-hundreds per line.
_NAME_CAP = 8
_OPERAND_NAME_CAP = 4
_ARG_ADD_CAP = 3
_ATTR_CAP = 8
_ITER_CAP = 8
_CONDITION_NAME_CAP = 2
_RETURN_NAME_CAP = 4
_INSERT_SOURCE_CAP = 6

_SIBLINGS: dict[str, tuple[str, ...]] = {
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

_ARITH_OPS: tuple[type[ast.operator], ...] = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
)
_BIT_OPS: tuple[type[ast.operator], ...] = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_OP_SYMBOL: dict[type[ast.AST], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.And: "and",
    ast.Or: "or",
}
# Comparison neighbours: the mistakes people actually make (strictness, direction, negation).
_CMP_NEIGHBOURS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt, ast.GtE),
    ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE),
    ast.Eq: (ast.NotEq, ast.Is),
    ast.NotEq: (ast.Eq, ast.IsNot),
    ast.Is: (ast.IsNot, ast.Eq),
    ast.IsNot: (ast.Is, ast.NotEq),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_BINOP_PREC: dict[type[ast.operator], int] = {
    ast.BitOr: 7,
    ast.BitXor: 8,
    ast.BitAnd: 9,
    ast.LShift: 10,
    ast.RShift: 10,
    ast.Add: 11,
    ast.Sub: 11,
    ast.Mult: 12,
    ast.Div: 12,
    ast.FloorDiv: 12,
    ast.Mod: 12,
    ast.MatMult: 12,
    ast.Pow: 14,
}
_PREC_NOT = 5
_PREC_ADD = 11
_PREC_UNARY = 13

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
_FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMP_TYPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Operator / context singletons are shared between nodes, so they cannot have a parent slot.
_NO_SLOT = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)
_SEQ_HINTS = ("list", "items", "seq", "arr", "lines", "words", "chars", "text", "data", "queue", "stack")
_MUTABLE_CALLS = {"list", "dict", "set"}
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
_ORDERING_OPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_IMPLICIT_NAMES = {"self", "cls"}


def _prec(node: ast.AST) -> int:
    """Python operator precedence of an expression (higher binds tighter)."""
    if isinstance(node, ast.NamedExpr | ast.Tuple | ast.Starred | ast.Yield | ast.YieldFrom):
        return 0
    if isinstance(node, ast.Lambda):
        return 1
    if isinstance(node, ast.IfExp):
        return 2
    if isinstance(node, ast.BoolOp):
        return 3 if isinstance(node.op, ast.Or) else 4
    if isinstance(node, ast.UnaryOp):
        return _PREC_NOT if isinstance(node.op, ast.Not) else _PREC_UNARY
    if isinstance(node, ast.Compare):
        return 6
    if isinstance(node, ast.BinOp):
        return _BINOP_PREC.get(type(node.op), 12)
    if isinstance(node, ast.Await):
        return 15
    return 16


def _first_line(node: ast.AST) -> int:
    lines = [node.lineno]  # type: ignore[attr-defined]
    for decorator in getattr(node, "decorator_list", ()):
        lines.append(decorator.lineno)
    return min(lines)


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _is_plain_constant(node: ast.AST) -> bool:
    """A literal that `is` must not be used with (anything but None/True/False/...)."""
    return isinstance(node, ast.Constant) and node.value not in (None, True, False, Ellipsis)


def _int_node(value: int) -> ast.expr:
    # Negative literals parse as UnaryOp(USub, Constant), so build them that way to round-trip.
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value))
    return ast.Constant(value=value)


def _looks_sequence(name: str) -> bool:
    lowered = name.lower()
    plural = len(lowered) > 2 and lowered.endswith("s") and not lowered.endswith("ss")
    return plural or any(hint in lowered for hint in _SEQ_HINTS)


def _scope_children(scope: ast.AST) -> list[ast.AST]:
    """The nodes evaluated *inside* a scope (not its decorators/defaults, which belong outside)."""
    if isinstance(scope, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return list(scope.body)
    if isinstance(scope, ast.Lambda):
        return [scope.body]
    if isinstance(scope, ast.DictComp):
        return [scope.key, scope.value, *scope.generators]
    if isinstance(scope, _COMP_TYPES):
        return [scope.elt, *scope.generators]  # type: ignore[attr-defined]
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
class _Binding:
    kind: str  # "value" | "callable" (functions) | "class" | "module"
    line: int


def _scope_bindings(scope: ast.AST, called: set[str]) -> dict[str, _Binding]:
    """Names bound in a scope with a coarse kind, so we only swap like for like."""
    out: dict[str, _Binding] = {}

    def bind(name: str, kind: str, line: int) -> None:
        if name not in out:
            out[name] = _Binding(kind, line)

    if isinstance(scope, _FUNC_TYPES):
        args = scope.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        for arg in every:
            if arg is not None:
                bind(arg.arg, "value", scope.lineno)
    if isinstance(scope, _COMP_TYPES):
        for generator in scope.generators:  # type: ignore[attr-defined]
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


@dataclass
class _Mutation:
    """One candidate edit before verification."""

    template: str
    tries: list[list[TextEdit]]  # alternative renderings; the first that round-trips wins
    apply: Callable[[], Callable[[], None]]  # mutate the shared tree in place; returns undo
    sites: list[ast.AST]  # original nodes changed in place: they and their ancestors get re-dumped
    description: str | None = None  # None: derived from the edited text
    focus: tuple[int, int] | None = None  # span of the replaced node, for the description
    expected: str = field(default="", init=False)
    sort_size: int = field(default=0, init=False)


class _Generator:
    def __init__(self, source: str, path: str, tree: ast.Module) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        self.lines = LineMap(source)
        self.parents: dict[int, tuple[ast.AST, str, int | None]] = {}
        for parent in ast.walk(tree):
            for name, value in ast.iter_fields(parent):
                if isinstance(value, list):
                    for index, item in enumerate(value):
                        if isinstance(item, ast.AST) and not isinstance(item, _NO_SLOT):
                            self.parents[id(item)] = (parent, name, index)
                elif isinstance(value, ast.AST) and not isinstance(value, _NO_SLOT):
                    self.parents[id(value)] = (parent, name, None)
        self.dumper = IncrementalDump(tree, self.lines)
        self.original_dump = self.dumper.original
        self.statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
        self.statements.sort(key=lambda s: (s.lineno, s.col_offset))
        self._analyse()

    # ----------------------------------------------------------------- file-wide facts
    def _analyse(self) -> None:
        tree = self.tree
        called: set[str] = set()
        loaded: set[str] = set()
        str_counts: Counter[str] = Counter()
        int_counts: Counter[int] = Counter()
        attr_counts: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
        self.attrs_by_base: dict[tuple[str, bool], list[str]] = {}
        docstrings = {
            id(node.body[0].value)  # type: ignore[attr-defined]
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
                is_call = self._is_call_func(node)
                attr_counts[is_call][node.attr] += 1
                if isinstance(node.value, ast.Name):
                    bucket = self.attrs_by_base.setdefault((node.value.id, is_call), [])
                    if node.attr not in bucket:
                        bucket.append(node.attr)
        self.called = called
        self.str_pool = [value for value, _ in str_counts.most_common()]
        self.int_pool = [value for value, _ in int_counts.most_common()]
        self.attr_pool = {kind: [a for a, _ in counts.most_common()] for kind, counts in attr_counts.items()}
        self.bindings: dict[int, dict[str, _Binding]] = {id(tree): _scope_bindings(tree, called)}
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

    def _is_call_func(self, node: ast.AST) -> bool:
        slot = self.parents.get(id(node))
        return slot is not None and isinstance(slot[0], ast.Call) and slot[1] == "func"

    def _slot(self, node: ast.AST) -> tuple[ast.AST, str, int | None] | None:
        return self.parents.get(id(node))

    def _ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        slot = self.parents.get(id(node))
        while slot is not None:
            yield slot[0]
            slot = self.parents.get(id(slot[0]))

    def _scope_chain(self, node: ast.AST) -> list[ast.AST]:
        """Enclosing scopes, innermost first; class bodies only when directly enclosing."""
        chain: list[ast.AST] = []
        seen_function = False
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                if not seen_function:
                    chain.append(ancestor)
                seen_function = True
            elif isinstance(ancestor, (*_FUNC_TYPES, *_COMP_TYPES)):
                chain.append(ancestor)
                seen_function = seen_function or isinstance(ancestor, _FUNC_TYPES)
            elif isinstance(ancestor, ast.Module):
                chain.append(ancestor)
        return chain

    def _bindings_of(self, scope: ast.AST) -> dict[str, _Binding]:
        key = id(scope)
        if key not in self.bindings:
            self.bindings[key] = _scope_bindings(scope, self.called)
        return self.bindings[key]

    def _kind(self, name: str, chain: list[ast.AST]) -> str | None:
        for scope in chain:
            binding = self._bindings_of(scope).get(name)
            if binding is not None:
                return binding.kind
        value = getattr(builtins, name, None)
        if value is not None:
            if isinstance(value, type):
                return "class"
            return "callable" if callable(value) else "builtin"
        return None

    def _enclosing_stmt(self, node: ast.AST) -> ast.stmt | None:
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, ast.stmt):
                return ancestor
        return None

    def _value_pool(self, node: ast.AST, exclude: str | None = None) -> list[str]:
        """Value names in scope for `node`, nearest first: same statement, locals, module."""
        chain = self._scope_chain(node)
        line = getattr(node, "lineno", 0)
        pool: list[str] = []
        seen = {exclude, *_IMPLICIT_NAMES}

        def add(name: str) -> None:
            if name not in seen and not name.startswith("__"):
                seen.add(name)
                pool.append(name)

        stmt = self._enclosing_stmt(node)
        if stmt is not None:
            # Compound statements contribute their header only, not their whole body.
            roots = _header_roots(stmt) if _is_compound(stmt) else [stmt]
            for root in roots:
                for sub in ast.walk(root):
                    if isinstance(sub, ast.Name) and self._kind(sub.id, chain) == "value":
                        add(sub.id)
        for scope in chain:
            bound = self._bindings_of(scope)
            names = [name for name, b in bound.items() if b.kind == "value"]
            names.sort(key=lambda n: abs(bound[n].line - line))
            for name in names:
                add(name)
        return pool

    def _callable_pool(self, node: ast.Name, kind: str) -> list[str]:
        """Functions for a function, classes for a class (exceptions for an exception)."""
        chain = self._scope_chain(node)
        pool: list[str] = []
        skip = {node.id, *_SIBLINGS.get(node.id, ())}  # sibling_call proposes those, better labelled
        for scope in chain:
            for name, binding in self._bindings_of(scope).items():
                if binding.kind == kind and name not in skip and name not in pool:
                    pool.append(name)
        builtin_names = self.used_builtins[kind]
        original = getattr(builtins, node.id, None)
        if isinstance(original, type) and issubclass(original, BaseException):
            builtin_names = [n for n in builtin_names if issubclass(getattr(builtins, n), BaseException)]
        for name in builtin_names:
            if name not in skip and name not in pool:
                pool.append(name)
        return pool

    # ---------------------------------------------------------------- targeting
    def _targets(self, line: int) -> list[tuple[ast.AST, list[ast.expr]]]:
        """Statements covering `line`: simple statements whole, compound ones by header only
        (including `except` clauses and `case` guards)."""
        found: list[tuple[ast.AST, list[ast.expr]]] = []
        for stmt in self.statements:
            if not _is_compound(stmt):
                if _first_line(stmt) <= line <= stmt.end_lineno:  # type: ignore[operator]
                    found.append((stmt, _simple_roots(stmt)))
                continue
            roots = _header_roots(stmt)
            end = max([stmt.lineno, *(root.end_lineno or root.lineno for root in roots)])
            if _first_line(stmt) <= line <= end:
                found.append((stmt, roots))
            if isinstance(stmt, ast.Try | ast.TryStar):
                for handler in stmt.handlers:
                    end = handler.type.end_lineno if handler.type is not None else handler.lineno
                    if handler.lineno <= line <= (end or handler.lineno):
                        found.append((handler, [handler.type] if handler.type is not None else []))
            if isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    guard = case.guard
                    if guard is not None and guard.lineno <= line <= (guard.end_lineno or guard.lineno):
                        found.append((case, [guard]))
        return found

    def mutations_for_line(self, line: int) -> list[_Mutation]:
        out: list[_Mutation] = []
        for stmt, roots in self._targets(line):
            tests = {id(t) for t in _condition_nodes(stmt)}
            for root in roots:
                for node in _walk_expr(root):
                    out.extend(self._node_mutations(node, id(node) in tests))
            if isinstance(stmt, ast.stmt):
                out.extend(self._stmt_mutations(stmt))
        for func in self._functions_covering(line):
            out.extend(self._mutable_defaults(func))
        return out

    def _functions_covering(self, line: int) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        funcs = [
            s
            for s in self.statements
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
            and _first_line(s) <= line <= (s.end_lineno or s.lineno)
        ]
        return sorted(funcs, key=lambda f: -f.lineno)  # innermost first

    # ------------------------------------------------------------- building blocks
    def _swap(self, node: ast.AST, new: ast.AST) -> Callable[[], Callable[[], None]]:
        parent, name, index = self.parents[id(node)]

        def apply() -> Callable[[], None]:
            if index is None:
                setattr(parent, name, new)
                return lambda: setattr(parent, name, node)
            items = getattr(parent, name)
            items[index] = new

            def undo() -> None:
                items[index] = node

            return undo

        return apply

    def _replace(
        self,
        template: str,
        node: ast.AST,
        new: ast.AST,
        text: str | None = None,
        preferred: Sequence[list[TextEdit]] = (),
    ) -> _Mutation | None:
        """Replace `node` by `new`; renderings tried: preferred edits, `text`, then unparse."""
        if id(node) not in self.parents:
            return None
        start, end = self.lines.span(node)
        texts: list[str] = []
        if text is not None:
            texts += [text, f"({text})"]
        try:
            rendered = ast.unparse(new)
        except Exception:  # unparse rejects a few synthetic shapes; the text renderings may still work
            rendered = None
        if rendered is not None:
            texts += [rendered, f"({rendered})"]
        tries = [list(edits) for edits in preferred]
        for candidate in dict.fromkeys(texts):
            tries.append([TextEdit(start, end, candidate)])
        if not tries:
            return None
        mutation = _Mutation(template, tries, self._swap(node, new), [node])
        mutation.focus = (start, end)
        return mutation

    def _text(self, node: ast.AST) -> str:
        return self.lines.segment(node)

    def _paren(self, node: ast.AST, min_prec: int) -> str:
        text = self._text(node)
        return f"({text})" if _prec(node) < min_prec else text

    def _op_edit(self, left: ast.AST, right: ast.AST, symbol: str) -> list[TextEdit] | None:
        """Edit replacing just the operator token between two operands."""
        gap = operator_span(self.source, self.lines.span(left)[1], self.lines.span(right)[0])
        if gap is None:
            return None
        return [TextEdit(gap[0], gap[1], symbol)]

    # ------------------------------------------------------------ per-node templates
    def _node_mutations(self, node: ast.expr, is_test: bool) -> Iterator[_Mutation | None]:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield from self._name_replace(node)
            yield from self._slice_add(node)
        if isinstance(node, ast.Constant):
            yield from self._constant_tweaks(node)
        if isinstance(node, ast.Attribute):
            yield from self._attribute_replace(node)
        if isinstance(node, ast.Call):
            yield from self._sibling_call(node)
            yield from self._call_args(node)
            yield from self._unwrap(node)
            yield from self._range_bounds(node)
        if isinstance(node, ast.BinOp):
            yield from self._binop(node)
        if isinstance(node, ast.Compare):
            yield from self._compare(node)
        if isinstance(node, ast.BoolOp):
            yield from self._boolop(node)
        if isinstance(node, ast.UnaryOp):
            yield from self._unary(node)
        if isinstance(node, ast.Subscript):
            yield from self._subscript(node)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            yield from self._iterable_add(node)
        if isinstance(node, ast.List | ast.Tuple) and isinstance(node.ctx, ast.Store):
            yield from self._target_swap(node)
        if is_test:
            yield from self._condition(node)
        yield from self._wrap(node)

    def _name_replace(self, node: ast.Name) -> Iterator[_Mutation | None]:
        chain = self._scope_chain(node)
        kind = self._kind(node.id, chain)
        if node.id in _IMPLICIT_NAMES or kind in (None, "module", "builtin"):
            return
        if kind in ("callable", "class"):
            pool = self._callable_pool(node, kind)
        elif self._is_call_func(node):
            return  # a value called like a function (callback): other values are not callables
        else:
            pool = self._value_pool(node, exclude=node.id)
        for name in pool[:_NAME_CAP]:
            yield self._replace("name_replace", node, ast.Name(id=name, ctx=ast.Load()), name)

    def _slice_add(self, node: ast.Name) -> Iterator[_Mutation | None]:
        slot = self._slot(node)
        if slot is None:
            return
        parent, name, _ = slot
        in_for = isinstance(parent, ast.For | ast.AsyncFor | ast.comprehension) and name == "iter"
        in_call = isinstance(parent, ast.Call) and name == "args" and _looks_sequence(node.id)
        if not (in_for or in_call):
            return
        for lower, upper, suffix in ((ast.Constant(value=1), None, "[1:]"), (None, _int_node(-1), "[:-1]")):
            new = ast.Subscript(
                value=ast.Name(id=node.id, ctx=ast.Load()),
                slice=ast.Slice(lower=lower, upper=upper, step=None),
                ctx=ast.Load(),
            )
            yield self._replace("slice_add", node, new, node.id + suffix)

    def _constant_tweaks(self, node: ast.Constant) -> Iterator[_Mutation | None]:
        value = node.value
        if isinstance(value, bool):
            yield self._replace("bool_flip", node, ast.Constant(value=not value), str(not value))
            return
        if type(value) is not int:
            return
        slot = self._slot(node)
        negated = slot is not None and isinstance(slot[0], ast.UnaryOp) and isinstance(slot[0].op, ast.USub)
        for new_value in dict.fromkeys((value + 1, value - 1, 1 if value == 0 else 0)):
            if new_value < 0 and negated:
                continue  # "--1" style noise
            if new_value == 0 and slot is not None and isinstance(slot[0], ast.BinOp):
                if isinstance(slot[0].op, ast.Add | ast.Sub) and slot[1] == "right":
                    continue  # x + 0 is just x: the drop is proposed by off_by_one
            yield self._replace("literal_tweak", node, _int_node(new_value), str(new_value))

    def _attribute_replace(self, node: ast.Attribute) -> Iterator[_Mutation | None]:
        if isinstance(node.value, ast.Constant):
            return  # `"sep".join`: other names used on other objects make no sense on a literal
        is_call = self._is_call_func(node)
        pool: list[str] = []
        if isinstance(node.value, ast.Name):
            pool.extend(self.attrs_by_base.get((node.value.id, is_call), []))
            if node.value.id == "self" and is_call:
                pool.extend(self._class_methods(node))
        pool.extend(self.attr_pool[is_call])
        end = self.lines.span(node)[1]
        count = 0
        for attr in dict.fromkeys(pool):
            if attr == node.attr or attr.startswith("__") or count >= _ATTR_CAP:
                continue
            if is_call and attr in _SIBLINGS.get(node.attr, ()):
                continue  # proposed by sibling_call
            new = ast.Attribute(value=node.value, attr=attr, ctx=node.ctx)
            preferred = []
            if self.source[end - len(node.attr) : end] == node.attr:
                preferred.append([TextEdit(end - len(node.attr), end, attr)])
            count += 1
            yield self._replace("attribute_replace", node, new, preferred=preferred)

    def _class_methods(self, node: ast.AST) -> list[str]:
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                return [
                    s.name
                    for s in ancestor.body
                    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and not s.name.startswith("__")
                ]
        return []

    def _sibling_call(self, node: ast.Call) -> Iterator[_Mutation | None]:
        func = node.func
        if isinstance(func, ast.Name):
            for other in _SIBLINGS.get(func.id, ()):
                yield self._replace("sibling_call", func, ast.Name(id=other, ctx=ast.Load()), other)
        elif isinstance(func, ast.Attribute):
            end = self.lines.span(func)[1]
            for other in _SIBLINGS.get(func.attr, ()):
                new = ast.Attribute(value=func.value, attr=other, ctx=ast.Load())
                preferred = []
                if self.source[end - len(func.attr) : end] == func.attr:
                    preferred.append([TextEdit(end - len(func.attr), end, other)])
                yield self._replace("sibling_call", func, new, preferred=preferred)

    def _call_args(self, node: ast.Call) -> Iterator[_Mutation | None]:
        func_name = node.func.id if isinstance(node.func, ast.Name) else ""
        if func_name in _UNARY_BUILTINS and len(node.args) == 1 and not node.keywords:
            return
        items: list[ast.AST] = sorted([*node.args, *node.keywords], key=lambda n: self.lines.span(n)[0])
        spans = [self.lines.span(item) for item in items]
        positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
        # Swap two positional arguments.
        for i in range(0 if func_name not in _SYMMETRIC_CALLS else len(positional), len(positional)):
            for j in range(i + 1, min(len(positional), i + 3)):
                a, b = positional[i], positional[j]
                args = list(node.args)
                ia, ib = args.index(a), args.index(b)
                args[ia], args[ib] = b, a
                new = ast.Call(func=node.func, args=args, keywords=node.keywords)
                (sa, ea), (sb, eb) = self.lines.span(a), self.lines.span(b)
                edits = [TextEdit(sa, ea, self._text(b)), TextEdit(sb, eb, self._text(a))]
                yield self._replace("arg_swap", node, new, preferred=[edits])
        # Drop one argument (positional or keyword).
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
            yield self._replace("arg_drop", node, new, preferred=[[edit]])
        # Add a name in scope as an extra positional argument.
        present = {a.id for a in node.args if isinstance(a, ast.Name)}
        pool = [n for n in self._value_pool(node) if n not in present][:_ARG_ADD_CAP]
        for name in pool:
            new = ast.Call(func=node.func, args=[*node.args, ast.Name(id=name, ctx=ast.Load())], keywords=node.keywords)
            if node.args:
                at = self.lines.span(node.args[-1])[1]
                edit = TextEdit(at, at, f", {name}")
            elif node.keywords:
                at = self.lines.span(node.keywords[0])[0]
                edit = TextEdit(at, at, f"{name}, ")
            else:
                at = self.lines.span(node)[1] - 1
                edit = TextEdit(at, at, name)
            yield self._replace("arg_add", node, new, preferred=[[edit]])

    def _unwrap(self, node: ast.Call) -> Iterator[_Mutation | None]:
        if len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
            slot = self._slot(node)
            if slot is not None and not isinstance(slot[0], ast.Expr) and not self._is_call_func(node):
                arg = node.args[0]
                yield self._replace("unwrap_call", node, arg, self._text(arg))

    def _wrap(self, node: ast.expr) -> Iterator[_Mutation | None]:
        if not isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call | ast.BinOp):
            return
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load) or self._is_call_func(node):
            return
        slot = self._slot(node)
        if slot is None or isinstance(slot[0], ast.Expr | ast.Attribute | ast.Raise) or slot[1] == "decorator_list":
            return  # wrapping a bare call statement, a decorator or the object of `x.attr`: never a fix
        if isinstance(node, ast.Name) and (
            node.id in _IMPLICIT_NAMES or self._kind(node.id, self._scope_chain(node)) != "value"
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
        text = self._text(node)
        for func in funcs:
            args: list[ast.expr] = [node]
            prefix = ""
            if func == "max":
                args = [ast.Constant(value=0), node]
                prefix = "0, "
            new = ast.Call(func=ast.Name(id=func, ctx=ast.Load()), args=args, keywords=[])
            yield self._replace("wrap_call", node, new, f"{func}({prefix}{text})")

    def _binop(self, node: ast.BinOp) -> Iterator[_Mutation | None]:
        family = _ARITH_OPS if isinstance(node.op, _ARITH_OPS) else _BIT_OPS
        if isinstance(node.op, family):
            for op_type in family:
                if isinstance(node.op, op_type):
                    continue
                new = ast.BinOp(left=node.left, op=op_type(), right=node.right)
                edit = self._op_edit(node.left, node.right, _OP_SYMBOL[op_type])
                yield self._replace("binop_replace", node, new, preferred=[edit] if edit else [])
        for side in ("left", "right"):
            yield from self._operand_replace(node, side, None)

    def _operand_replace(self, parent: ast.AST, field_name: str, index: int | None) -> Iterator[_Mutation | None]:
        operand = getattr(parent, field_name) if index is None else getattr(parent, field_name)[index]
        if isinstance(operand, ast.Constant) and type(operand.value) is not int:
            return
        names: list[str] = []
        if not isinstance(operand, ast.Name):
            # Names already in the expression give `a - a`-style nonsense.
            present = {sub.id for sub in ast.walk(parent) if isinstance(sub, ast.Name)}
            names = [n for n in self._value_pool(operand) if n not in present][:_OPERAND_NAME_CAP]
        for name in names:
            yield self._replace("operand_replace", operand, ast.Name(id=name, ctx=ast.Load()), name)
        if isinstance(parent, ast.Compare) and not all(isinstance(op, _ORDERING_OPS) for op in parent.ops):
            return  # `x is 0` is a warning and `0 in xs` a type error, never a fix
        for value in (0, 1):
            if isinstance(operand, ast.Constant) and operand.value == value:
                continue
            if value == 0 and isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add | ast.Sub):
                if field_name == "right":
                    continue  # `x - 0` is just `x`: the plain drop is proposed by off_by_one
            yield self._replace("operand_replace", operand, ast.Constant(value=value), str(value))

    def _compare(self, node: ast.Compare) -> Iterator[_Mutation | None]:
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            for op_type in _CMP_NEIGHBOURS.get(type(op), ()):
                if op_type in (ast.Is, ast.IsNot) and (
                    _is_plain_constant(operands[i]) or _is_plain_constant(operands[i + 1])
                ):
                    continue
                ops = list(node.ops)
                ops[i] = op_type()
                new = ast.Compare(left=node.left, ops=ops, comparators=node.comparators)
                edit = self._op_edit(operands[i], operands[i + 1], _OP_SYMBOL[op_type])
                yield self._replace("compare_replace", node, new, preferred=[edit] if edit else [])
        yield from self._operand_replace(node, "left", None)
        for index in range(len(node.comparators)):
            yield from self._operand_replace(node, "comparators", index)
        # Off-by-one on the compared quantities (`i < len(xs) - 1` -> `i < len(xs)`).
        if all(isinstance(op, _ORDERING_OPS) for op in node.ops):
            for operand in operands:
                yield from self._plus_minus(operand)

    def _boolop(self, node: ast.BoolOp) -> Iterator[_Mutation | None]:
        other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        edits: list[TextEdit] = []
        for left, right in zip(node.values, node.values[1:], strict=False):
            edit = self._op_edit(left, right, _OP_SYMBOL[type(other)])
            if edit is None:
                edits = []
                break
            edits.extend(edit)
        new = ast.BoolOp(op=other, values=list(node.values))
        yield self._replace("boolop_replace", node, new, preferred=[edits] if edits else [])
        # Dropping a conjunct widens a condition; dropping a disjunct narrows it.
        template = "condition_widen" if isinstance(node.op, ast.And) else "condition_narrow"
        spans = [self.lines.span(v) for v in node.values]
        for k in range(len(node.values)):
            rest = [v for i, v in enumerate(node.values) if i != k]
            replacement = rest[0] if len(rest) == 1 else ast.BoolOp(op=type(node.op)(), values=rest)
            if k > 0:
                edit = TextEdit(spans[k - 1][1], spans[k][1], "")
            else:
                edit = TextEdit(spans[0][0], spans[1][0], "")
            yield self._replace(template, node, replacement, preferred=[[edit]])

    def _unary(self, node: ast.UnaryOp) -> Iterator[_Mutation | None]:
        start, end = self.lines.span(node)
        width = 3 if isinstance(node.op, ast.Not) else 1
        text = self.source[start + width : end].lstrip(" \t")
        yield self._replace("unary_replace", node, node.operand, text)

    def _condition(self, node: ast.expr) -> Iterator[_Mutation | None]:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start, end = self.lines.span(node)
            yield self._replace("condition_negate", node, node.operand, self.source[start + 3 : end].lstrip())
        else:
            negated = ast.UnaryOp(op=ast.Not(), operand=node)
            yield self._replace("condition_negate", node, negated, f"not {self._paren(node, _PREC_NOT)}")
        chain = self._scope_chain(node)
        # None guards are about locals/parameters; module constants are never None by design.
        local_scopes = [scope for scope in chain if not isinstance(scope, ast.Module)] or chain
        names = [
            sub.id
            for sub in ast.walk(node)
            if isinstance(sub, ast.Name)
            and isinstance(sub.ctx, ast.Load)
            and self._kind(sub.id, local_scopes) == "value"
        ]
        for name in list(dict.fromkeys(names))[:_CONDITION_NAME_CAP]:
            guard = ast.Compare(
                left=ast.Name(id=name, ctx=ast.Load()),
                ops=[ast.IsNot()],
                comparators=[ast.Constant(value=None)],
            )
            narrowed = ast.BoolOp(op=ast.And(), values=[guard, node])
            text = f"{name} is not None and {self._paren(node, _PREC_NOT)}"
            yield self._replace("condition_narrow", node, narrowed, text)
            escape = ast.Compare(
                left=ast.Name(id=name, ctx=ast.Load()), ops=[ast.Is()], comparators=[ast.Constant(value=None)]
            )
            widened = ast.BoolOp(op=ast.Or(), values=[escape, node])
            text = f"{name} is None or {self._paren(node, 4)}"
            yield self._replace("condition_widen", node, widened, text)

    def _plus_minus(self, node: ast.expr) -> Iterator[_Mutation | None]:
        """`e` -> `e + 1` / `e - 1`, and `e ± k` -> `e` (constants are left to literal_tweak)."""
        if isinstance(node, ast.Constant | ast.Compare | ast.BoolOp | ast.JoinedStr | ast.Tuple | ast.Slice):
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            return
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and _is_int(node.right):
            yield self._replace("off_by_one", node, node.left, self._text(node.left))
            return
        base = self._paren(node, _PREC_ADD)
        for op_type, symbol in ((ast.Add, "+"), (ast.Sub, "-")):
            new = ast.BinOp(left=node, op=op_type(), right=ast.Constant(value=1))
            yield self._replace("off_by_one", node, new, f"{base} {symbol} 1")

    def _range_bounds(self, node: ast.Call) -> Iterator[_Mutation | None]:
        if not (isinstance(node.func, ast.Name) and node.func.id == "range") or node.keywords:
            return
        if any(isinstance(arg, ast.Starred) for arg in node.args) or not 1 <= len(node.args) <= 3:
            return
        for arg in node.args[:2]:
            yield from self._plus_minus(arg)
        if len(node.args) == 1:
            stop = node.args[0]
            stop_text = self._text(stop)
            # range(n) -> range(1, n) / range(1, n + 1): the 0- vs 1-based loop mix-up.
            variants: list[tuple[ast.expr, str]] = [(stop, stop_text)]
            if not isinstance(stop, ast.Constant):
                bumped = ast.BinOp(left=stop, op=ast.Add(), right=ast.Constant(value=1))
                variants.append((bumped, f"{self._paren(stop, _PREC_ADD)} + 1"))
            for new_stop, text in variants:
                new = ast.Call(func=node.func, args=[ast.Constant(value=1), new_stop], keywords=[])
                at = self.lines.span(stop)
                yield self._replace("off_by_one", node, new, preferred=[[TextEdit(at[0], at[1], f"1, {text}")]])

    def _subscript(self, node: ast.Subscript) -> Iterator[_Mutation | None]:
        index = node.slice
        if isinstance(index, ast.Slice):
            for bound in ("lower", "upper"):
                value = getattr(index, bound)
                if value is None:
                    continue
                yield from self._plus_minus(value)
                fields = {"lower": index.lower, "upper": index.upper, "step": index.step, bound: None}
                start, end = self.lines.span(value)
                new = ast.Slice(**fields)
                yield self._replace("off_by_one", index, new, preferred=[[TextEdit(start, end, "")]])
        elif not isinstance(index, ast.Constant | ast.Tuple):
            yield from self._plus_minus(index)

    def _target_swap(self, node: ast.List | ast.Tuple) -> Iterator[_Mutation | None]:
        """Swap two neighbouring unpacking targets (`i, x = ...` for `x, i = ...`)."""
        for i in range(len(node.elts) - 1):
            a, b = node.elts[i], node.elts[i + 1]
            if isinstance(a, ast.Starred) or isinstance(b, ast.Starred):
                continue
            elts = list(node.elts)
            elts[i], elts[i + 1] = b, a
            (sa, ea), (sb, eb) = self.lines.span(a), self.lines.span(b)
            edits = [TextEdit(sa, ea, self._text(b)), TextEdit(sb, eb, self._text(a))]
            new = type(node)(elts=elts, ctx=ast.Store())
            yield self._replace("target_swap", node, new, preferred=[edits])

    def _iterable_add(self, node: ast.List | ast.Tuple | ast.Set) -> Iterator[_Mutation | None]:
        if not node.elts or not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return
        if not all(isinstance(e, ast.Constant) for e in node.elts):
            return
        values = [e.value for e in node.elts]  # type: ignore[attr-defined]
        kinds = {type(v) for v in values}
        if kinds == {str}:
            lengths = sorted(len(v) for v in values)
            median = lengths[len(lengths) // 2]
            pool: list[object] = sorted(
                (v for v in self.str_pool if v not in values), key=lambda v: abs(len(v) - median)
            )
        elif kinds == {int}:
            pool = [v for v in self.int_pool if v not in values]
        else:
            return
        last = node.elts[-1]
        last_text = self._text(last)
        at = self.lines.span(last)[1]
        for value in pool[:_ITER_CAP]:
            literal = repr(value)
            if isinstance(value, str) and last_text.startswith('"') and value.isprintable():
                if '"' not in value and "\\" not in value:
                    literal = f'"{value}"'
            new_elts = [*node.elts, ast.Constant(value=value)]
            new: ast.expr
            if isinstance(node, ast.Set):
                new = ast.Set(elts=new_elts)
            else:
                new = type(node)(elts=new_elts, ctx=ast.Load())
            yield self._replace("iterable_add", node, new, preferred=[[TextEdit(at, at, f", {literal}")]])

    # ------------------------------------------------------- statement templates
    def _stmt_mutations(self, stmt: ast.stmt) -> Iterator[_Mutation | None]:
        if isinstance(stmt, ast.AugAssign):
            family = _ARITH_OPS if isinstance(stmt.op, _ARITH_OPS) else _BIT_OPS
            for op_type in family:
                if isinstance(stmt.op, op_type) or not isinstance(stmt.op, family):
                    continue
                new_aug = ast.AugAssign(target=stmt.target, op=op_type(), value=stmt.value)
                edit = self._op_edit(stmt.target, stmt.value, _OP_SYMBOL[op_type] + "=")
                yield self._replace("binop_replace", stmt, new_aug, preferred=[edit] if edit else [])
        if isinstance(stmt, ast.Return):
            yield from self._return(stmt)
        if not _is_compound(stmt):
            yield from self._delete(stmt)
        yield from self._insert(stmt)

    def _return(self, stmt: ast.Return) -> Iterator[_Mutation | None]:
        value = stmt.value
        start = self.lines.span(stmt)[0]
        if value is None:
            at = start + len("return")
            choices = [
                ("bool_flip", "True", ast.Constant(value=True)),
                ("bool_flip", "False", ast.Constant(value=False)),
            ]
            for name in self._value_pool(stmt)[:_RETURN_NAME_CAP]:
                choices.append(("return_replace", name, ast.Name(id=name, ctx=ast.Load())))
            for template, text, node in choices:
                new = ast.Return(value=node)
                yield self._replace(template, stmt, new, preferred=[[TextEdit(at, at, f" {text}")]])
            return
        if isinstance(value, ast.Constant) and value.value is None:
            for flag in (True, False):
                yield self._replace("bool_flip", value, ast.Constant(value=flag), str(flag))
            return
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            yield self._replace("bool_flip", value, ast.Constant(value=None), "None")
            return
        yield self._replace("return_replace", value, ast.Constant(value=None), "None")
        if not isinstance(value, ast.Name):
            for name in self._value_pool(stmt)[:_RETURN_NAME_CAP]:
                yield self._replace("return_replace", value, ast.Name(id=name, ctx=ast.Load()), name)

    def _whole_lines(self, stmt: ast.stmt) -> tuple[int, int] | None:
        """Span of the full lines a statement occupies alone, line break included."""
        start, end = self.lines.span(stmt)
        if not (self.lines.starts_line(start) and self.lines.ends_line(end)):
            return None
        return self.lines.line_start(_first_line(stmt)), self.lines.next_line_start(stmt.end_lineno or stmt.lineno)

    def _delete(self, stmt: ast.stmt) -> Iterator[_Mutation | None]:
        if isinstance(stmt, ast.Pass | ast.Global | ast.Nonlocal):
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # docstrings / bare literals
        slot = self._slot(stmt)
        if slot is None or slot[2] is None:
            return
        parent, name, index = slot
        siblings: list[ast.stmt] = getattr(parent, name)
        described = f"delete `{shorten(self._text(stmt))}`"
        if len(siblings) == 1:
            mutation = self._replace("stmt_delete", stmt, ast.Pass(), "pass")
            if mutation is not None:
                mutation.description = described
            yield mutation
            return
        whole = self._whole_lines(stmt)
        if whole is None:
            return

        def apply() -> Callable[[], None]:
            siblings.pop(index)
            return lambda: siblings.insert(index, stmt)

        yield _Mutation("stmt_delete", [[TextEdit(whole[0], whole[1], "")]], apply, [parent], described)

    def _insert(self, stmt: ast.stmt) -> Iterator[_Mutation | None]:
        """Copy a simple statement from the same function/class next to the target."""
        slot = self._slot(stmt)
        if slot is None or slot[2] is None:
            return
        parent, name, index = slot
        siblings: list[ast.stmt] = getattr(parent, name)
        start, end = self.lines.span(stmt)
        if not self.lines.starts_line(start):
            return
        container = None
        for ancestor in self._ancestors(stmt):
            if isinstance(ancestor, ast.FunctionDef | ast.AsyncFunctionDef):
                container = ancestor
                owner = self._slot(ancestor)
                if owner is not None and isinstance(owner[0], ast.ClassDef):
                    container = owner[0]  # sibling methods are fair sources too
                break
        if container is None:
            return
        target_text = self._text(stmt)
        indent = self.lines.indent_of(stmt.lineno)
        nl = self.lines.newline
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
            text = self._text(other)
            if text == target_text or text in (t for _, t in sources):
                continue
            sources.append((other, text))
        sources.sort(key=lambda pair: abs(pair[0].lineno - stmt.lineno))
        # Nothing after a jump statement would ever run.
        jump = isinstance(stmt, ast.Return | ast.Raise | ast.Continue | ast.Break)
        after_ok = not _is_compound(stmt) and not jump and self.lines.ends_line(end)
        last_line = stmt.end_lineno or stmt.lineno
        for other, text in sources[:_INSERT_SOURCE_CAP]:
            positions: list[tuple[int, int, str, str]] = [
                (
                    self.lines.line_start(_first_line(stmt)),
                    index,
                    f"{indent}{text}{nl}",
                    f"before line {stmt.lineno}",
                )
            ]
            if after_ok:
                at = self.lines.next_line_start(last_line)
                lead = "" if self.lines.has_line_break(last_line) else nl
                trail = nl if self.lines.has_line_break(last_line) else ""
                positions.append((at, index + 1, f"{lead}{indent}{text}{trail}", f"after line {last_line}"))
            for at, position, insert_text, where in positions:
                copied = copy.deepcopy(other)

                def apply(position: int = position, copied: ast.stmt = copied) -> Callable[[], None]:
                    siblings.insert(position, copied)
                    return lambda: siblings.pop(position)

                description = f"insert `{shorten(text)}` {where}"
                yield _Mutation("stmt_insert", [[TextEdit(at, at, insert_text)]], apply, [parent], description)

    def _mutable_defaults(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[_Mutation | None]:
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        pairs: list[tuple[ast.arg, ast.expr]] = list(
            zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
        )
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
        body = func.body
        first = 1 if _is_docstring(body[0]) else 0
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
            edits = self._sentinel_edits(func, arg.arg, default, first)
            if edits is None:
                continue

            def apply(
                func: ast.FunctionDef | ast.AsyncFunctionDef = func,
                default: ast.expr = default,
                name: str = arg.arg,
            ) -> Callable[[], None]:
                undo_default = self._swap(default, ast.Constant(value=None))()
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

            description = f"use a None sentinel for mutable default `{arg.arg}={shorten(self._text(default))}`"
            yield _Mutation("mutable_default", [edits], apply, [default], description)

    def _sentinel_edits(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, name: str, default: ast.expr, first: int
    ) -> list[TextEdit] | None:
        body = func.body
        nl = self.lines.newline
        start, end = self.lines.span(default)
        value_text = self._text(default)
        if "\n" in value_text or "\r" in value_text:
            value_text = ast.unparse(default)
        if first < len(body):
            anchor = body[first]
            anchor_start = self.lines.span(anchor)[0]
            if anchor.lineno == func.lineno or not self.lines.starts_line(anchor_start):
                return None  # one-line def: no room for a guard without reformatting
            indent = self.lines.indent_of(anchor.lineno)
            at = self.lines.line_start(_first_line(anchor))
            lead, trail = "", nl
        else:  # body is only a docstring: guard goes after it
            doc = body[0]
            if not self.lines.ends_line(self.lines.span(doc)[1]) or doc.lineno == func.lineno:
                return None
            indent = self.lines.indent_of(doc.lineno)
            last = doc.end_lineno or doc.lineno
            at = self.lines.next_line_start(last)
            has_break = self.lines.has_line_break(last)
            lead, trail = ("", nl) if has_break else (nl, "")
        def_indent = self.lines.indent_of(func.lineno)
        unit = indent[len(def_indent) :] if indent.startswith(def_indent) and len(indent) > len(def_indent) else "    "
        guard = f"{lead}{indent}if {name} is None:{nl}{indent}{unit}{name} = {value_text}{trail}"
        return [TextEdit(start, end, "None"), TextEdit(at, at, guard)]

    # --------------------------------------------------------------- verification
    def expected_dump(self, mutation: _Mutation) -> str:
        """Dump of the tree we intend to produce (the mutation applied to the original AST)."""
        dirty: set[int] = set()
        for site in mutation.sites:
            dirty.add(id(site))
            dirty.update(id(ancestor) for ancestor in self._ancestors(site))
        undo = mutation.apply()
        try:
            return self.dumper.mutated(dirty)
        finally:
            undo()

    def render(self, edits: list[TextEdit]) -> tuple[str, str] | None:
        """New source and its normalized dump, or None when it does not parse."""
        return self.dumper.render(edits)


def _is_compound(node: ast.AST) -> bool:
    """Statements with nested blocks: only their header is a mutation target."""
    return isinstance(node, ast.stmt) and any(
        isinstance(getattr(node, name, None), list) for name in ("body", "cases", "handlers")
    )


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _simple_roots(stmt: ast.stmt) -> list[ast.expr]:
    roots: list[ast.expr] = []
    for name, value in ast.iter_fields(stmt):
        if name == "annotation":
            continue  # mutating type hints never changes behaviour
        if isinstance(value, ast.expr):
            roots.append(value)
        elif isinstance(value, list):
            roots.extend(item for item in value if isinstance(item, ast.expr))
    return roots


def _header_roots(stmt: ast.stmt) -> list[ast.expr]:
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


def _condition_nodes(stmt: ast.AST) -> list[ast.expr]:
    """Expressions used as truth tests: where narrowing/widening/negation makes sense."""
    tests: list[ast.expr] = []
    if isinstance(stmt, ast.If | ast.While | ast.Assert):
        tests.append(stmt.test)
    if isinstance(stmt, ast.match_case) and stmt.guard is not None:
        tests.append(stmt.guard)
    compound = isinstance(stmt, ast.excepthandler | ast.match_case) or _is_compound(stmt)
    for node in _header_walk(stmt) if compound else ast.walk(stmt):
        if isinstance(node, ast.IfExp):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
    return tests


def _header_walk(stmt: ast.AST) -> Iterator[ast.AST]:
    for root in _header_roots(stmt) if isinstance(stmt, ast.stmt) else []:
        yield from ast.walk(root)


def _walk_expr(root: ast.AST) -> Iterator[ast.expr]:
    """Pre-order walk of mutable expression nodes (f-string internals and annotations skipped)."""
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr):
            continue
        if isinstance(node, ast.expr):
            yield node
        children = []
        for name, value in ast.iter_fields(node):
            if name == "annotation" or name == "returns":
                continue
            if isinstance(value, ast.AST) and not isinstance(value, _NO_SLOT):
                children.append(value)
            elif isinstance(value, list):
                children.extend(v for v in value if isinstance(v, ast.AST) and not isinstance(v, _NO_SLOT))
        stack.extend(reversed(children))


def candidate_edits(source: str, path: str, lines: Sequence[int], *, max_per_line: int = 400) -> list[SourceEdit]:
    """Candidate one-statement fixes at the given suspicious lines.

    Grouped by line in the given order; within a line sorted by prior (descending), then by the
    size of the textual change. Every edit parses, differs semantically from the original, and
    is unique by normalized AST across the whole result (the first occurrence is kept).
    """
    # A UTF-8 byte-order mark survives a plain read but is a syntax error in a str: edit the
    # text after it and put it back, so the file keeps its encoding signature.
    bom = "\ufeff" if source.startswith("\ufeff") else ""
    text = source[len(bom) :]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    generator = _Generator(text, path, tree)
    seen = {generator.original_dump}
    results: list[SourceEdit] = []
    done_lines: set[int] = set()
    for line in lines:
        if line in done_lines or not 1 <= line <= generator.lines.line_count:
            continue
        done_lines.add(line)
        results.extend(_edits_for_line(generator, line, seen, max_per_line))
    if bom:
        results = [replace(edit, new_source=bom + edit.new_source) for edit in results]
    return results


def _edits_for_line(generator: _Generator, line: int, seen: set[str], limit: int) -> list[SourceEdit]:
    mutations = [m for m in generator.mutations_for_line(line) if m is not None]
    for mutation in mutations:
        mutation.expected = generator.expected_dump(mutation)
        mutation.sort_size = change_size(generator.source, mutation.tries[0])
    # Verify in final order so the best-ranked rendering of each distinct program wins.
    mutations.sort(key=lambda m: (-PRIORS[m.template], m.sort_size))
    accepted: list[tuple[float, int, int, SourceEdit]] = []
    for order, mutation in enumerate(mutations):
        if len(accepted) >= limit:
            break
        if mutation.expected in seen:
            continue
        for edits in mutation.tries:
            rendered = generator.render(edits)
            if rendered is None or rendered[1] != mutation.expected:
                continue
            new_source, normalized = rendered
            seen.add(normalized)
            edit = _to_source_edit(generator, mutation, edits, new_source, normalized)
            size = change_size(generator.source, edits)
            accepted.append((-edit.prior, size, order, edit))
            break
    accepted.sort(key=lambda item: item[:3])
    return [item[3] for item in accepted]


def _to_source_edit(
    generator: _Generator, mutation: _Mutation, edits: list[TextEdit], new_source: str, normalized: str
) -> SourceEdit:
    source = generator.source
    start = min(e.start for e in edits)
    end = max(e.end for e in edits)
    line = generator.lines.line_of(start)
    description = mutation.description
    if description is None:
        if mutation.focus is not None and mutation.focus[0] <= start and end <= mutation.focus[1]:
            start, end = mutation.focus  # describe the whole mutated expression, not just a token
        delta = sum(len(e.text) - (e.end - e.start) for e in edits)
        old, new = source[start:end], new_source[start : end + delta]
        description = f"replace `{shorten(old)}` with `{shorten(new)}`"
    return SourceEdit(
        path=generator.path,
        template=mutation.template,
        description=f"line {line}: {description}",
        line=line,
        prior=PRIORS[mutation.template],
        new_source=new_source,
        normalized=normalized,
    )
