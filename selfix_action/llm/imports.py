"""A module's import block, for the prompts: every module-level import statement whole (a multi-line
``from .compat import (...)`` never cut), with the ``try:``/``except ImportError:``/``if`` lines that guard one.

What a fix may use is what the module imports: a model shown half of the block writes ``isinstance(x, int)`` where
the project's own string type, imported three lines below, was the complete fix.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from selfix_action.repair.paths import is_test_path

# Imports are shown whole up to this many lines per module (a statement never cut: one that would pass the bound
# is left out whole); module constants share the slice's own smaller budget.
MAX_IMPORT_LINES = 120


def import_lines(tree: ast.Module | None, limit: int = MAX_IMPORT_LINES) -> set[int]:
    """The lines of every import statement at module level, including those inside a module-level ``try``/``if``
    (with that statement's header, handler and ``else`` lines, so the guard reads as code)."""
    lines: set[int] = set()
    if tree is None:
        return lines
    for node in tree.body:
        wanted = _statement_imports(node)
        if wanted and len(lines) + len(wanted - lines) <= limit:
            lines |= wanted
    return lines


def _statement_imports(node: ast.stmt) -> set[int]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _whole(node)
    if not isinstance(node, ast.Try | ast.If):
        return set()
    inner: set[int] = set()
    for child in _children(node):
        inner |= _statement_imports(child)
    if not inner:
        return set()
    return inner | _headers(node)


def _children(node: ast.Try | ast.If) -> list[ast.stmt]:
    if isinstance(node, ast.If):
        return [*node.body, *node.orelse]
    handlers = [stmt for handler in node.handlers for stmt in handler.body]
    return [*node.body, *handlers, *node.orelse, *node.finalbody]


def _headers(node: ast.Try | ast.If) -> set[int]:
    """The lines that open each block of a ``try`` or ``if``: ``try:``, ``except ...:``, ``else:``, ``if ...:``,
    and the fallback assignments beside the imports (``X = None`` under ``except ImportError:``)."""
    heads = {node.lineno}
    blocks: list[list[ast.stmt]] = [node.body, node.orelse]
    if isinstance(node, ast.Try):
        heads |= {handler.lineno for handler in node.handlers}
        blocks.append(node.finalbody)
        blocks += [handler.body for handler in node.handlers]
    else:
        heads |= set(range(node.lineno, (node.test.end_lineno or node.lineno) + 1))
    for body in (node.orelse, node.finalbody if isinstance(node, ast.Try) else []):
        if body and not (isinstance(node, ast.If) and len(body) == 1 and isinstance(body[0], ast.If)):
            heads.add(body[0].lineno - 1)  # ``else:`` / ``finally:`` (the line above the block's first statement)
    for body in blocks:
        for stmt in body:
            if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.Pass):
                heads |= _whole(stmt)
    return heads


def _whole(node: ast.stmt) -> set[int]:
    return set(range(node.lineno, (node.end_lineno or node.lineno) + 1))


def test_helper_imports(test_files: Sequence[str], read_file: Callable[[str], str]) -> list[str]:
    """The import statements of the failing tests' modules that import the project's own test helpers (a module
    of the test package that is neither a test module nor a conftest.py: ``from tests.utils import run``),
    written absolute as a module saved elsewhere must write them, each once."""
    found: list[str] = []
    for path in test_files:
        try:
            tree = ast.parse(read_file(path))
        except (OSError, UnicodeDecodeError, ValueError, SyntaxError):
            continue
        package = PurePosixPath(path).parent.parts
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted = [f"import {_alias(alias)}" for alias in node.names if _kind(alias.name, read_file) == "helper"]
            elif isinstance(node, ast.ImportFrom):
                wanted = _helper_names(node, package, read_file)
            else:
                continue
            found += [statement for statement in wanted if statement not in found]
    return found


def _helper_names(node: ast.ImportFrom, package: tuple[str, ...], read_file: Callable[[str], str]) -> list[str]:
    """``from X import a, b`` as absolute statements of the names that are helpers: a helper module ``X.a``, or
    a name of ``X`` when ``X`` itself is a helper module."""
    if node.level and node.level - 1 > len(package):
        return []
    base = list(package[: len(package) - node.level + 1]) if node.level else []
    module = ".".join([*base, *(node.module.split(".") if node.module else [])])
    if not module:
        return []
    of_module = _kind(module, read_file)
    helpers = []
    for alias in node.names:
        kind = _kind(f"{module}.{alias.name}", read_file)
        if kind == "helper" or (kind == "" and of_module == "helper"):
            helpers.append(_alias(alias))
    return [f"from {module} import {', '.join(helpers)}"] if helpers else []


def _alias(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def _kind(module: str, read_file: Callable[[str], str]) -> str:
    """ "helper" for a module of the test package that is neither a test module nor a conftest.py, "test" for one
    of those, "" for a module that is not a file of the test package (the project's, a library's, a name)."""
    stem = module.replace(".", "/")
    for path in (f"{stem}.py", f"{stem}/__init__.py"):
        if not is_test_path(path):
            continue
        try:
            read_file(path)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        name = PurePosixPath(path).name
        return "test" if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py") else "helper"
    return ""
