"""A module's import block, for the prompts: every module-level import statement whole (a multi-line
``from .compat import (...)`` never cut), with the ``try:``/``except ImportError:``/``if`` lines that guard one.

What a fix may use is what the module imports: a model shown half of the block writes ``isinstance(x, int)`` where
the project's own string type, imported three lines below, was the complete fix.
"""

from __future__ import annotations

import ast

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
