"""Static sanity of a candidate patch: edits that cannot make sense are rejected before any test runs.

Pure syntax-tree analysis of the patched files against their originals; no project code is imported or run.
Only problems the patch *adds* count (a file's own oddities are compared away: problems are matched by kind and
text, not line, between the original and the patched file), and only in the top-level statements the patch
touches. What is refused:

- a literal where an object is needed: ``hasattr("shape", x)``, ``getattr(1, "a")``, ``isinstance(x, "str")``,
  ``len(3)``; a literal called (``"abc"()``), subscripted where that raises (``None[0]``, ``3[1]``), given an
  attribute its type does not have (``"abc".shape``), iterated (``for x in 3``), tested with ``in`` (``x in 5``),
  or combined with another literal in a way that raises (``"a" - 1``, ``1 / 0``);
- a call with the wrong arity against a signature visible in the project's source: a function or class defined
  in the module, a method called on ``self`` in its own class, or a function imported from another project
  module (``from pkg.mod import f``, ``import pkg.mod`` then ``pkg.mod.f(...)``) (too many positional
  arguments, a required argument missing, an unknown keyword);
- a call that cannot bind to the signature of a builtin (``hasattr(x)``, ``len(a, b)``, ``sorted(xs, reversed=True)``)
  or of a callable imported from the standard library (``json.dumps(x, indnt=2)``, ``from os.path import join``):
  their signatures come from ``inspect.signature`` in selfix's own process (the standard module is imported
  there, never the project's code; a project module of the same name wins, and is read as source);
- a name that is bound nowhere in its scopes, the module or the builtins;
- a file that does not parse.

Anything this analysis cannot see for sure (a decorated function, a name bound twice, a star import, ``*args``
in the call) is left to the tests: a false refusal would hide a fix, a missed one only costs a test run.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import operator
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

BUILTIN_NAMES = frozenset(dir(builtins)) | {
    "__file__",
    "__name__",
    "__doc__",
    "__spec__",
    "__loader__",
    "__package__",
    "__path__",
    "__builtins__",
    "__annotations__",
    "__debug__",
    "__dict__",
}
# Names only class bodies and methods have (``__class__`` is the implicit closure cell of ``super()``).
CLASS_NAMES = frozenset({"__class__", "__module__", "__qualname__"})
OBJECT_ARGUMENT = frozenset({"hasattr", "getattr", "setattr", "delattr", "vars"})
TYPE_ARGUMENT = frozenset({"isinstance", "issubclass"})
ITERABLE_ARGUMENT = frozenset(
    {
        "len",
        "list",
        "tuple",
        "set",
        "frozenset",
        "sorted",
        "sum",
        "min",
        "max",
        "enumerate",
        "reversed",
        "iter",
        "any",
        "all",
    }
)
# Literal types that are neither iterable nor subscriptable.
SCALAR_TYPES = (int, float, complex, bool, type(None), type(Ellipsis))
# Binary operators safe to evaluate on two literals (none of them can build a huge value).
SAFE_BINOPS: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,
}
MAX_LITERAL_CHARS = 200
# Standard modules whose import does more than define names (opens a browser, prints, starts a GUI, runs tests):
# their callables are not looked up.
UNSAFE_STANDARD_MODULES = frozenset(
    {"antigravity", "this", "__hello__", "__phello__", "idlelib", "tkinter", "turtle", "turtledemo", "test"}
)
_TYPE_ALIAS = getattr(
    ast, "TypeAlias", None
)  # ``type X = ...``, Python 3.12+  # longer string literals are not evaluated


@dataclass(frozen=True)
class SanityIssue:
    """One problem a patch adds. ``kind`` is one of: literal, arity, unbound_name, syntax."""

    kind: str
    message: str  # names what and where, never the line (issues are matched across line shifts by it)
    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


def _module_names(path: str) -> list[str]:
    """Every dotted name a project file may be imported as: ``src/pkg/mod.py`` -> pkg.mod, mod (and src.pkg.mod)."""
    parts = path[:-3].split("/") if path.endswith(".py") else []
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts))]


class ProjectSignatures:
    """Top-level functions and classes of the project's modules, parsed on first use.

    ``read_source(path)`` gives a file's unpatched text (None: unreadable); ``source_files()`` the project's
    Python files, repo-relative."""

    def __init__(self, read_source: Callable[[str], str | None], source_files: Callable[[], Sequence[str]]) -> None:
        self._read = read_source
        self._source_files = source_files
        self._by_module: dict[str, str] | None = None
        self._claimed: frozenset[str] = frozenset()
        self._files: frozenset[str] | None = None
        self._defs: dict[str, dict[str, ast.AST]] = {}

    def files(self) -> frozenset[str]:
        """The project's Python files, listed once (they do not change during a heal)."""
        if self._files is None:
            self._files = frozenset(self._source_files())
        return self._files

    def _modules(self) -> dict[str, str]:
        if self._by_module is None:
            claims: dict[str, set[str]] = {}
            for path in self.files():
                for name in _module_names(path):
                    claims.setdefault(name, set()).add(path)
            self._by_module = {name: next(iter(paths)) for name, paths in claims.items() if len(paths) == 1}
            self._claimed = frozenset(claims)
        return self._by_module

    def claims(self, module: str) -> bool:
        """Could ``module`` (or its top-level package) be one of the project's files (``json.py`` in any folder)?"""
        self._modules()
        top = module.split(".")[0]
        return module in self._claimed or top in self._claimed

    def has_file(self, path: str) -> bool:
        return path in self.files()

    def file_of(self, module: str) -> str | None:
        return self._modules().get(module)

    def patched_by(self, files: Mapping[str, str]) -> ProjectSignatures:
        """The project as a candidate leaves it: its files' definitions read from ``files``, the others' shared
        with this one. A patch that adds a parameter to a function in one module and passes it from another is
        checked against the signature it gives the function, not the one it replaces."""
        edited = {path: text for path, text in files.items() if path.endswith(".py")}
        if not edited:
            return self
        overlay = ProjectSignatures(
            lambda path: edited[path] if path in edited else self._read(path), self._source_files
        )
        overlay._by_module, overlay._claimed, overlay._files = self._modules(), self._claimed, self.files()
        overlay._defs = {path: defs for path, defs in self._defs.items() if path not in edited}
        return overlay

    def definitions(self, path: str) -> dict[str, ast.AST]:
        """Names bound exactly once at the top of ``path``, to the def or class that binds them."""
        if path not in self._defs:
            text = self._read(path)
            try:
                tree = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError):
                tree = None
            self._defs[path] = _top_definitions(tree) if tree is not None else {}
        return self._defs[path]


def _top_definitions(tree: ast.Module, counts: Counter[str] | None = None) -> dict[str, ast.AST]:
    counts = counts if counts is not None else Counter(_bindings(tree.body))
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and counts[node.name] == 1:
            found[node.name] = node
    return found


# -- scopes ----------------------------------------------------------------------------------------------
def _bindings(nodes: Sequence[ast.AST]) -> Iterator[str]:
    """Names bound in the scope these nodes are the body of (nested function and class bodies excluded;
    comprehension variables included, which can only make fewer names look unbound)."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
            continue  # its body is another scope; its decorators and defaults bind nothing here
        elif isinstance(node, ast.Lambda):
            continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                yield alias.asname or alias.name.split(".")[0]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node.name
        elif isinstance(node, ast.Global | ast.Nonlocal):
            yield from node.names
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest
        elif _TYPE_ALIAS is not None and isinstance(node, _TYPE_ALIAS) and isinstance(node.name, ast.Name):
            yield node.name.id
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _arguments(args: ast.arguments) -> Iterator[str]:
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        yield arg.arg
    if args.vararg:
        yield args.vararg.arg
    if args.kwarg:
        yield args.kwarg.arg


def _has_star_import(tree: ast.Module) -> bool:
    """``from m import *`` (legal at module level only, possibly under an ``if`` or ``try``)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.If | ast.Try | ast.With):
            stack.extend(ast.iter_child_nodes(node))
    return False


@dataclass
class _Scope:
    names: frozenset[str]
    is_class: bool = False
    class_node: ast.ClassDef | None = None  # for a method's scope: the class it is defined in
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None


class _Checker:
    """Walks the touched top-level statements of one parsed module with its scopes and records issues."""

    def __init__(self, tree: ast.Module, path: str, project: ProjectSignatures | None) -> None:
        self.tree = tree
        self.path = path
        self.project = project
        self.module_counts = Counter(_bindings(tree.body))
        self.module_names = frozenset(self.module_counts)
        self.check_names = not _has_star_import(tree)
        self.top_defs = _top_definitions(tree, self.module_counts)
        self.issues: list[SanityIssue] = []

    def add(self, kind: str, message: str, node: ast.AST) -> None:
        self.issues.append(SanityIssue(kind, message, self.path, getattr(node, "lineno", 0)))

    # -- walking with scopes ----------------------------------------------------------------------------
    def check(self, statements: Sequence[ast.stmt]) -> list[SanityIssue]:
        self.issues = []
        for statement in statements:
            self.visit(statement, [])
        return self.issues

    def visit(self, node: ast.AST, scopes: list[_Scope], class_node: ast.ClassDef | None = None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for outer in (*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d]):
                self.visit(outer, scopes)
            # Methods do not see the class body's names; they see everything further out.
            outer_scopes = [s for s in scopes if not s.is_class]
            names = {*_arguments(node.args), *_bindings(node.body)}
            names.update(p.name for p in getattr(node, "type_params", ()))  # def f[T](...)
            inner = _Scope(frozenset(names), False, class_node, node)
            for statement in node.body:
                self.visit(statement, [*outer_scopes, inner])
            return
        if isinstance(node, ast.ClassDef):
            for outer in (*node.decorator_list, *node.bases, *[k.value for k in node.keywords]):
                self.visit(outer, scopes)
            names = {*_bindings(node.body), *CLASS_NAMES, *(p.name for p in getattr(node, "type_params", ()))}
            inner = _Scope(frozenset(names), True)
            for statement in node.body:
                self.visit(statement, [*scopes, inner], class_node=node)
            return
        if isinstance(node, ast.Lambda):
            for default in (*node.args.defaults, *[d for d in node.args.kw_defaults if d]):
                self.visit(default, scopes)
            inner = _Scope(frozenset(_arguments(node.args)) | frozenset(_bindings([node.body])))
            self.visit(node.body, [*[s for s in scopes if not s.is_class], inner])
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            bound = frozenset(_bindings([g.target for g in node.generators]))
            inner = _Scope(bound | frozenset(_bindings([node])))
            self.visit(node.generators[0].iter, scopes)
            rest: list[ast.AST] = []
            for index, generator in enumerate(node.generators):
                if index:
                    rest.append(generator.iter)
                rest += generator.ifs
                self.check_iterated(generator.iter)
            rest += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for child in rest:
                self.visit(child, [*scopes, inner])
            return
        if isinstance(node, ast.AnnAssign):
            for part in (node.target, node.value):
                if part is not None:
                    self.visit(part, scopes, class_node)
            return  # annotations may name what only a type checker sees
        if isinstance(node, ast.arg):
            return  # argument annotations, as above
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self.check_name(node, scopes)
        elif isinstance(node, ast.Call):
            self.check_call(node, scopes)
        elif isinstance(node, ast.Subscript):
            self.check_subscript(node)
        elif isinstance(node, ast.Attribute):
            self.check_attribute(node)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self.check_iterated(node.iter)
        elif isinstance(node, ast.Compare):
            self.check_compare(node)
        elif isinstance(node, ast.BinOp):
            self.check_binop(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.arguments):
                continue
            self.visit(child, scopes, class_node)

    def bound(self, name: str, scopes: Sequence[_Scope]) -> bool:
        if any(name in scope.names for scope in scopes):
            return True
        if name in self.module_names or name in BUILTIN_NAMES:
            return True
        return name == "__class__" and any(s.class_node is not None for s in scopes)

    def shadowed(self, name: str, scopes: Sequence[_Scope]) -> bool:
        """Bound in a function or class scope: a builtin or module-level definition does not apply."""
        return any(name in scope.names for scope in scopes)

    # -- the checks ------------------------------------------------------------------------------------
    def check_name(self, node: ast.Name, scopes: Sequence[_Scope]) -> None:
        if self.check_names and not self.bound(node.id, scopes):
            where = next((s.function.name for s in reversed(scopes) if s.function is not None), "<module>")
            self.add("unbound_name", f"name `{node.id}` is bound nowhere in scope (in `{where}`)", node)

    def check_call(self, node: ast.Call, scopes: Sequence[_Scope]) -> None:
        func = node.func
        if _is_literal(func):
            self.add("literal", f"calls the literal `{_text(func)}`, which is not callable", node)
            return
        if isinstance(func, ast.Name) and not self.shadowed(func.id, scopes):
            name = func.id
            if name not in self.module_names:
                self.check_builtin_call(name, node)
                if name in BUILTIN_NAMES and hasattr(builtins, name):
                    self.check_binding(getattr(builtins, name), node, name, "a builtin")
            definition = self.top_defs.get(name) if self.module_counts[name] == 1 else None
            if definition is None and self.module_counts[name] == 1:
                definition = self.imported_definition(name)
            if definition is not None:
                self.check_arity(definition, node, _text(func), bound_first=False, decorated_ok=False)
            elif self.module_counts[name] == 1:
                self.check_imported_call(name, [], node)
        elif (chain := _attribute_chain(func)) is not None and not self.shadowed(chain[0], scopes):
            if self.module_counts[chain[0]] == 1:
                self.check_imported_call(chain[0], chain[1:], node)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and (method_of := self.enclosing_class(scopes)) is not None
        ):
            method = _method(method_of, func.attr)
            if method is not None:
                kind = _method_kind(method)
                if kind is not None:
                    self.check_arity(method, node, f"self.{func.attr}", bound_first=kind != "static", decorated_ok=True)

    def check_builtin_call(self, name: str, node: ast.Call) -> None:
        args = node.args
        if not args or any(isinstance(a, ast.Starred) for a in args):
            return
        first = args[0]
        if name in OBJECT_ARGUMENT and _is_literal(first):
            self.add("literal", f"`{name}()` gets the literal `{_text(first)}` where an object is needed", node)
        if name in {"hasattr", "getattr", "setattr", "delattr"} and len(args) > 1:
            second = args[1]
            if _is_literal(second, str_ok=True):
                self.add("literal", f"`{name}()` needs an attribute name, not `{_text(second)}`", node)
        if name in TYPE_ARGUMENT and len(args) > 1:
            kinds = args[1].elts if isinstance(args[1], ast.Tuple) else [args[1]]
            bad = next((k for k in kinds if _is_literal(k) and not isinstance(k, ast.Tuple)), None)
            if bad is not None:
                self.add("literal", f"`{name}()` needs a type, not the literal `{_text(bad)}`", node)
            if name == "issubclass" and _is_literal(first):
                self.add("literal", f"`issubclass()` needs a class, not the literal `{_text(first)}`", node)
        if name in ITERABLE_ARGUMENT and len(args) == 1 and not node.keywords and _scalar(first):
            self.add("literal", f"`{name}()` gets `{_text(first)}`, which is not iterable", node)

    def imported_definition(self, name: str) -> ast.AST | None:
        """The def or class ``name`` is imported as from another project module (``from pkg.mod import f``)."""
        if self.project is None:
            return None
        for node in self.tree.body:
            if not isinstance(node, ast.ImportFrom):
                continue
            for alias in node.names:
                if (alias.asname or alias.name) != name:
                    continue
                path = self.resolve(node)
                return self.project.definitions(path).get(alias.name) if path else None
        return None

    def check_imported_call(self, name: str, attributes: Sequence[str], call: ast.Call) -> None:
        """A call of ``name.a.b(...)`` (``attributes``: a, b) where ``name`` is imported at the top of the module:
        checked against the project module's def (read as source) or the standard module's callable."""
        target = self.import_target(name)
        if target is None:
            return
        module, level = target
        dotted = [*module.split("."), *attributes] if module else list(attributes)
        called = ".".join([name, *attributes])
        if self.project is not None and (level or self.project.claims(".".join(dotted[:1]))):
            definition = self.project_definition(dotted, level)
            if definition is not None:
                self.check_arity(definition, call, called, bound_first=False, decorated_ok=False)
            return  # a project module (or one shadowing a standard module) is never imported here
        if level or self.project is None:
            return  # no project listing: a standard module's name may be the project's own
        found = _standard_callable(tuple(dotted))
        if found is not None:
            self.check_binding(found, call, ".".join(dotted), "the standard library's", called=called)

    def import_target(self, name: str) -> tuple[str, int] | None:
        """(dotted path, relative level) ``name`` is bound to by a top-level import: ``import a.b as n`` ->
        ("a.b", 0); ``import a.b`` binds ``a`` -> ("a", 0); ``from .m import n`` -> ("m.n", 1)."""
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname == name:
                        return alias.name, 0
                    if alias.asname is None and alias.name.split(".")[0] == name:
                        return name, 0
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name and alias.name != "*":
                        return ".".join(p for p in (node.module, alias.name) if p), node.level
        return None

    def project_definition(self, dotted: Sequence[str], level: int) -> ast.AST | None:
        """The def or class at ``dotted`` (a module path, then one name in it) among the project's files."""
        assert self.project is not None
        for split in range(len(dotted) - 1, 0, -1):
            module, rest = dotted[:split], dotted[split:]
            if len(rest) != 1:
                continue  # a class's method or a nested name: not read
            path = self.resolve(ast.ImportFrom(module=".".join(module), names=[], level=level))
            if path is not None:
                return self.project.definitions(path).get(rest[0])
        return None

    def check_binding(self, target: object, call: ast.Call, qualname: str, origin: str, called: str = "") -> None:
        """The call's arguments bound to ``target``'s runtime signature (when it has one and the call spells out
        its arguments): a call that cannot bind raises TypeError wherever it runs."""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return
        signature = _signature(target)
        if signature is None:
            return
        try:
            signature.bind(*(None for _ in call.args), **{k.arg: None for k in call.keywords if k.arg})
        except TypeError as exc:
            called = called or _text(call.func)
            self.add("arity", f"`{called}(...)` does not fit `{qualname}{signature}` ({origin}): {exc}", call)

    def resolve(self, node: ast.ImportFrom) -> str | None:
        assert self.project is not None
        if not node.level:
            return self.project.file_of(node.module or "")
        package = self.path.split("/")[:-1]
        if node.level > 1:
            package = package[: -(node.level - 1)] if len(package) >= node.level - 1 else []
        base = "/".join([*package, *(node.module.split(".") if node.module else [])])
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if self.project.has_file(candidate):
                return candidate
        return None

    def enclosing_class(self, scopes: Sequence[_Scope]) -> ast.ClassDef | None:
        for scope in reversed(scopes):
            if scope.function is not None:
                return scope.class_node
        return None

    def check_arity(
        self, definition: ast.AST, call: ast.Call, called: str, *, bound_first: bool, decorated_ok: bool
    ) -> None:
        """``decorated_ok``: the caller checked the decorators (a method's staticmethod/classmethod)."""
        function = definition
        if isinstance(definition, ast.ClassDef):
            init = _plain_class_init(definition, self.top_defs)
            if init is None:
                return
            function, bound_first = init, True
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        if function is definition and function.decorator_list and not decorated_ok:
            return  # a decorator may change the signature
        problem = _arity_problem(function.args, call, bound_first)
        if problem:
            self.add("arity", f"`{called}(...)` {problem} (signature of `{function.name}` in the project)", call)

    def check_subscript(self, node: ast.Subscript) -> None:
        if _scalar(node.value):
            self.add("literal", f"subscripts the literal `{_text(node.value)}`, which is not subscriptable", node)

    def check_attribute(self, node: ast.Attribute) -> None:
        value = node.value
        if isinstance(value, ast.Constant) and not hasattr(type(value.value), node.attr):
            kind = type(value.value).__name__
            self.add("literal", f"`{_text(node)}`: a {kind} literal has no attribute `{node.attr}`", node)
        elif _is_literal(value) and not isinstance(value, ast.Constant):
            literal_type = {ast.List: list, ast.Tuple: tuple, ast.Dict: dict, ast.Set: set, ast.JoinedStr: str}
            kind_of = next((t for k, t in literal_type.items() if isinstance(value, k)), None)
            if kind_of is not None and not hasattr(kind_of, node.attr):
                self.add(
                    "literal", f"`{_text(node)}`: a {kind_of.__name__} literal has no attribute `{node.attr}`", node
                )

    def check_iterated(self, iterable: ast.AST) -> None:
        if _scalar(iterable):
            self.add("literal", f"iterates over `{_text(iterable)}`, which is not iterable", iterable)

    def check_compare(self, node: ast.Compare) -> None:
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.In | ast.NotIn) and _scalar(right):
                self.add("literal", f"`in` over `{_text(right)}`, which is not a container", node)

    def check_binop(self, node: ast.BinOp) -> None:
        left, right = node.left, node.right
        evaluate = SAFE_BINOPS.get(type(node.op))
        if evaluate is None or not (isinstance(left, ast.Constant) and isinstance(right, ast.Constant)):
            return
        if any(isinstance(v.value, str | bytes) and len(v.value) > MAX_LITERAL_CHARS for v in (left, right)):
            return
        try:
            evaluate(left.value, right.value)
        except (TypeError, ZeroDivisionError, ValueError) as exc:
            self.add("literal", f"`{_text(node)}` raises {type(exc).__name__} on its literals", node)


def _attribute_chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"] (a name and attributes only), else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return None
    return [node.id, *reversed(parts)]


def _signature(target: object) -> inspect.Signature | None:
    """The runtime signature of a function, builtin or class, if Python can tell it (many builtins cannot)."""
    if not callable(target) or not (inspect.isroutine(target) or inspect.isclass(target)):
        return None
    try:
        return inspect.signature(target)
    except (ValueError, TypeError):
        return None


@functools.cache  # a standard module's callables do not change during a run
def _standard_callable(dotted: tuple[str, ...]) -> object | None:
    """The object at ``dotted`` in the standard library (the longest importable module prefix, then attributes),
    or None when it is not a standard module's, or its import is unsafe or fails."""
    top = dotted[0]
    if top not in sys.stdlib_module_names or top in UNSAFE_STANDARD_MODULES:
        return None
    for split in range(len(dotted) - 1, 0, -1):
        module = ".".join(dotted[:split])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated modules warn on import
                found: object = importlib.import_module(module)
        except Exception:  # a standard module missing on this platform, or failing to import here
            continue
        for attribute in dotted[split:]:
            found = getattr(found, attribute, None)
            if found is None:
                return None
        return found
    return None


def _is_literal(node: ast.AST, *, str_ok: bool = False) -> bool:
    """A literal value: a constant, an f-string, a list/tuple/dict/set display or a comprehension."""
    if isinstance(node, ast.Constant):
        return not (str_ok and isinstance(node.value, str))
    return isinstance(
        node, ast.JoinedStr | ast.List | ast.Tuple | ast.Dict | ast.Set | ast.ListComp | ast.SetComp | ast.DictComp
    )


def _scalar(node: ast.AST) -> bool:
    """A literal that is neither iterable nor subscriptable (a number, a bool, None, ...)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, SCALAR_TYPES)


def _text(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``name`` defined once in ``cls``'s body (bound nowhere else there), else None."""
    if Counter(_bindings(cls.body))[name] != 1:
        return None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    return None


def _method_kind(method: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """ "plain" or "static"; None for a decorated method whose signature the decorator may change (a
    classmethod is bound too: its first parameter is taken like ``self``)."""
    names = [d.id for d in method.decorator_list if isinstance(d, ast.Name)]
    if len(names) != len(method.decorator_list) or any(n not in ("staticmethod", "classmethod") for n in names):
        return None
    return "static" if "staticmethod" in names else "plain"


def _plain_class_init(cls: ast.ClassDef, top_defs: Mapping[str, ast.AST]) -> ast.FunctionDef | None:
    """``cls.__init__`` when calling the class surely calls it: no decorator, metaclass or ``__new__``, and no
    base but ``object`` or plain classes of the same module."""
    if cls.decorator_list or cls.keywords or _method(cls, "__new__") is not None:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id == "object":
            continue
        parent = top_defs.get(base.id) if isinstance(base, ast.Name) else None
        if not isinstance(parent, ast.ClassDef) or parent is cls or _plain_class_init(parent, top_defs) is None:
            return None
    init = _method(cls, "__init__")
    if init is not None and isinstance(init, ast.FunctionDef) and not init.decorator_list:
        return init
    return None


def _arity_problem(args: ast.arguments, call: ast.Call, bound_first: bool) -> str:
    """What is wrong with ``call``'s arguments against ``args`` ("" if nothing surely is)."""
    positional = [*args.posonlyargs, *args.args]
    n_defaults = len(args.defaults)
    required = [p for i, p in enumerate(positional) if i < len(positional) - n_defaults]
    posonly = {p.arg for p in args.posonlyargs}
    if bound_first:
        if not positional:
            return ""  # a method without self: the tests will say
        first = positional[0]
        positional, required = positional[1:], [p for p in required if p is not first]
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    double_starred = any(k.arg is None for k in call.keywords)
    given = len(call.args)
    if not starred and args.vararg is None and given > len(positional):
        return f"passes {given} positional argument(s); it takes at most {len(positional)}"
    keywords = [k.arg for k in call.keywords if k.arg is not None]
    accepted = {p.arg for p in positional if p.arg not in posonly} | {p.arg for p in args.kwonlyargs}
    if args.kwarg is None:
        unknown = [k for k in keywords if k not in accepted]
        if unknown:
            return f"passes the unknown keyword `{unknown[0]}`"
    if starred or double_starred:
        return ""
    for index, param in enumerate(positional):
        if param in required and index >= given and param.arg not in keywords:
            return f"misses the required argument `{param.arg}`"
    for param, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is None and param.arg not in keywords:
            return f"misses the required keyword argument `{param.arg}`"
    return ""


# -- a patch ---------------------------------------------------------------------------------------------
def changed_span(original: str, patched: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The 1-based line ranges (original, patched) between the common prefix and suffix of two texts: every
    change lies in them (a linear scan; candidates change a few lines of a file)."""
    a, b = original.splitlines(), patched.splitlines()
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    # An insertion or deletion has an empty range on one side: the line after it stands for it.
    return (prefix + 1, max(prefix + 1, len(a) - suffix)), (prefix + 1, max(prefix + 1, len(b) - suffix))


def _overlaps(node: ast.stmt, lo: int, hi: int) -> bool:
    start = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
    return start <= hi and lo <= (node.end_lineno or node.lineno)


def _check_span(checker: _Checker, tree: ast.Module, lo: int, hi: int) -> list[SanityIssue]:
    """The issues of the statements overlapping lines lo..hi: whole top-level statements, except that of a
    class only the body statements in the range are visited (a method edit does not re-check the class)."""
    checker.issues = []
    for statement in tree.body:
        if not _overlaps(statement, lo, hi):
            continue
        body_start = statement.body[0].lineno if isinstance(statement, ast.ClassDef) else 0
        if isinstance(statement, ast.ClassDef) and lo >= body_start:
            names = {*_bindings(statement.body), *CLASS_NAMES}
            scope = _Scope(frozenset(names), True)
            for inner in statement.body:
                if _overlaps(inner, lo, hi):
                    checker.visit(inner, [scope], class_node=statement)
        else:
            checker.visit(statement, [])
    return checker.issues


def file_issues(
    path: str,
    original: str | None,
    patched: str,
    project: ProjectSignatures | None,
    before: tuple[ast.Module, _Checker] | None = None,
) -> list[SanityIssue]:
    """The problems ``patched`` has that ``original`` (None: a new file) has not, in the statements it touches.
    ``before``: the original's parsed tree and checker, if the caller keeps them."""
    try:
        tree = ast.parse(patched)
    except (SyntaxError, ValueError) as exc:
        return [SanityIssue("syntax", f"does not parse: {exc}", path)]
    checker = _Checker(tree, path, project)
    if original is None:
        return checker.check(tree.body)
    (old_lo, old_hi), (new_lo, new_hi) = changed_span(original, patched)
    found = _check_span(checker, tree, new_lo, new_hi)
    if not found:
        return found
    if before is None:
        try:
            old_tree = ast.parse(original)
        except (SyntaxError, ValueError):
            return found
        before = (old_tree, _Checker(old_tree, path, project))
    # The same statements in the original: what was there already is not the patch's doing.
    known = Counter((i.kind, i.message) for i in _check_span(before[1], before[0], old_lo, old_hi))
    new = []
    for issue in found:
        key = (issue.kind, issue.message)
        if known[key]:
            known[key] -= 1
        else:
            new.append(issue)
    return new


class SanityChecker:
    """``issues(files)``: what a candidate's whole new files add that cannot make sense (empty: go on)."""

    def __init__(self, read_source: Callable[[str], str | None], source_files: Callable[[], Sequence[str]]) -> None:
        self.read_source = read_source
        self.project = ProjectSignatures(read_source, source_files)
        self._originals: dict[str, tuple[str | None, tuple[ast.Module, _Checker] | None]] = {}

    def _original(self, path: str) -> tuple[str | None, tuple[ast.Module, _Checker] | None]:
        """The unpatched text, tree and checker of ``path`` (they never change during a heal): read once."""
        if path not in self._originals:
            text = self.read_source(path)
            parsed = None
            if text is not None:
                try:
                    tree = ast.parse(text)
                    parsed = (tree, _Checker(tree, path, self.project))
                except (SyntaxError, ValueError):
                    parsed = None
            self._originals[path] = (text, parsed)
        return self._originals[path]

    def issues(self, files: Mapping[str, str]) -> list[SanityIssue]:
        found: list[SanityIssue] = []
        changed = {path: text for path, text in files.items() if path.endswith(".py")}
        changed = {path: text for path, text in changed.items() if self._original(path)[0] != text}
        project = self.project.patched_by(changed)
        for path in sorted(changed):
            original, parsed = self._original(path)
            found += file_issues(path, original, changed[path], project, parsed)
        return found
