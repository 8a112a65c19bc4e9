"""What the failing tests use from other modules, for the prompts: the project classes they build (header,
attributes and constructor: a reader shown only a class's ``__repr__`` cannot tell what its fields hold) and the
test helpers they call from the test package (``from tests.utils import run``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import PurePosixPath

from selfix_action.repair.paths import is_test_path

ReadFile = Callable[[str], str]

CONSTRUCTORS = ("__init__", "__new__", "__post_init__")
MAX_USED = 4  # names followed per failing test
MAX_USED_LINES = 60  # lines of one constructor or helper shown


def used_names(node: ast.AST) -> list[str]:
    """Names a test calls or reads attributes of (``Client(...)``, ``Client.build()``, ``run(...)``), first
    seen first."""
    found: list[str] = []
    for child in ast.walk(node):
        target = None
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            target = child.func.id
        elif isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
            target = child.value.id
        if target is not None and target not in found:
            found.append(target)
    return found


def imported_from(tree: ast.Module, test_path: str) -> dict[str, str]:
    """Name -> the absolute module a test module imports it from (``from x.y import Name``)."""
    package = PurePosixPath(test_path).parent.parts
    names: dict[str, str] = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.ImportFrom) or (stmt.level and stmt.level - 1 > len(package)):
            continue
        base = list(package[: len(package) - stmt.level + 1]) if stmt.level else []
        module = ".".join([*base, *(stmt.module.split(".") if stmt.module else [])])
        for alias in stmt.names:
            names[alias.asname or alias.name] = module
    return names


def module_file(module: str, read_file: ReadFile) -> str | None:
    """The repository file of a dotted module (at the root, or under src/ or lib/), if there is one."""
    stem = module.replace(".", "/")
    for root in ("", "src/", "lib/"):
        for end in (".py", "/__init__.py"):
            path = f"{root}{stem}{end}"
            try:
                read_file(path)
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            return path
    return None


def built_classes(test: ast.AST, tree: ast.Module, test_path: str, read_file: ReadFile) -> dict[str, set[int]]:
    """The project source classes a failing test builds or uses, imported by name: their header, class-level
    statements and constructor lines, per source file."""
    return _follow(test, tree, test_path, read_file, want_class=True)


def used_helpers(test: ast.AST, tree: ast.Module, test_path: str, read_file: ReadFile) -> dict[str, set[int]]:
    """The test-package helpers (functions and classes of a module that is no test module nor conftest.py) a
    failing test calls, imported by name: their lines, per helper file."""
    return _follow(test, tree, test_path, read_file, want_class=False)


def _follow(
    test: ast.AST, tree: ast.Module, test_path: str, read_file: ReadFile, *, want_class: bool
) -> dict[str, set[int]]:
    imported = imported_from(tree, test_path)
    wanted: dict[str, set[int]] = {}
    followed = 0
    for name in used_names(test):
        if followed >= MAX_USED or name not in imported:
            continue
        path = module_file(imported[name], read_file)
        if path is None or _is_helper(path) == want_class or (want_class and is_test_path(path)):
            continue
        try:
            source = ast.parse(read_file(path))
        except (OSError, UnicodeDecodeError, ValueError, SyntaxError):
            continue
        definition = next(
            (s for s in source.body if isinstance(s, ast.ClassDef | ast.FunctionDef) and s.name == name), None
        )
        if definition is None:
            continue
        if want_class:
            if not isinstance(definition, ast.ClassDef):
                continue
            lines = class_with_constructor(definition)
        else:
            lines = _lines(definition, MAX_USED_LINES)
        wanted.setdefault(path, set()).update(lines)
        followed += 1
    return wanted


def class_with_constructor(node: ast.ClassDef) -> set[int]:
    """A class's header, its class-level statements (attributes, dataclass fields) and its constructor."""
    lines = set(range(_first(node), node.body[0].lineno if node.body else node.lineno + 1))
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if stmt.name in CONSTRUCTORS:
                lines |= _lines(stmt, MAX_USED_LINES)
        elif not isinstance(stmt, ast.ClassDef | ast.Expr):
            lines |= _lines(stmt, MAX_USED_LINES)
    return lines


def find_class(tree: ast.Module, qualified: str) -> ast.ClassDef | None:
    """The class ``qualified`` names (``Outer.Inner`` for a nested one), or None."""
    node: ast.AST = tree
    for part in qualified.split("."):
        found = next((c for c in ast.iter_child_nodes(node) if isinstance(c, ast.ClassDef) and c.name == part), None)
        if found is None:
            return None
        node = found
    return node if isinstance(node, ast.ClassDef) else None


def constructor_lines(tree: ast.Module, qualified: str) -> set[int]:
    """The constructor lines of the class ``qualified`` names (``Outer.Inner`` for a nested one)."""
    node = find_class(tree, qualified)
    if node is None:
        return set()
    lines: set[int] = set()
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in CONSTRUCTORS:
            lines |= _lines(stmt, MAX_USED_LINES)
    return lines


def _is_helper(path: str) -> bool:
    name = PurePosixPath(path).name
    test_module = name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
    return is_test_path(path) and not test_module


def _first(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return min([d.lineno for d in node.decorator_list] + [node.lineno])


def _lines(node: ast.stmt, limit: int) -> set[int]:
    first = _first(node) if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) else node.lineno
    last = min(node.end_lineno or node.lineno, first + limit - 1)
    return set(range(first, last + 1))
