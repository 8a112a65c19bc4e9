"""Where the templates apply at a suspicious line: the statements covering it (simple ones whole,
compound ones by their header only), the expressions inside them in walk order, which of those are
truth tests, and the functions whose signature a line's bug may come from.

The walk order here is part of the candidate order: within a prior, equal-sized candidates keep the
order in which they were generated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from selfix_action.offline.templates.analysis import NO_SLOT, FileFacts, first_line, header_roots, is_compound

# A mutation target: a statement, `except` clause or `case`, and the expressions to mutate in it.
Target = tuple[ast.AST, list[ast.expr]]


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


def targets(facts: FileFacts, line: int) -> list[Target]:
    """Statements covering `line`: simple statements whole, compound ones by header only
    (including `except` clauses and `case` guards)."""
    found: list[Target] = []
    for stmt in facts.statements:
        if not is_compound(stmt):
            if first_line(stmt) <= line <= stmt.end_lineno:  # type: ignore[operator]
                found.append((stmt, _simple_roots(stmt)))
            continue
        roots = header_roots(stmt)
        end = max([stmt.lineno, *(root.end_lineno or root.lineno for root in roots)])
        if first_line(stmt) <= line <= end:
            found.append((stmt, roots))
        if isinstance(stmt, ast.Try | ast.TryStar):
            for handler in stmt.handlers:
                handler_end = handler.type.end_lineno if handler.type is not None else handler.lineno
                if handler.lineno <= line <= (handler_end or handler.lineno):
                    found.append((handler, [handler.type] if handler.type is not None else []))
        if isinstance(stmt, ast.Match):
            for case in stmt.cases:
                guard = case.guard
                if guard is not None and guard.lineno <= line <= (guard.end_lineno or guard.lineno):
                    found.append((case, [guard]))
    return found


def _header_walk(stmt: ast.AST) -> Iterator[ast.AST]:
    for root in header_roots(stmt) if isinstance(stmt, ast.stmt) else []:
        yield from ast.walk(root)


def condition_nodes(stmt: ast.AST) -> list[ast.expr]:
    """Expressions used as truth tests: where narrowing/widening/negation makes sense."""
    tests: list[ast.expr] = []
    if isinstance(stmt, ast.If | ast.While | ast.Assert):
        tests.append(stmt.test)
    if isinstance(stmt, ast.match_case) and stmt.guard is not None:
        tests.append(stmt.guard)
    compound = isinstance(stmt, ast.excepthandler | ast.match_case) or is_compound(stmt)
    for node in _header_walk(stmt) if compound else ast.walk(stmt):
        if isinstance(node, ast.IfExp):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
    return tests


def walk_expr(root: ast.AST) -> Iterator[ast.expr]:
    """Pre-order walk of mutable expression nodes (f-string internals and annotations skipped)."""
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr):
            yield node  # the f-string as a whole (its fields' order); its parts are not mutated
            continue
        if isinstance(node, ast.expr):
            yield node
        children = []
        for name, value in ast.iter_fields(node):
            if name == "annotation" or name == "returns":
                continue
            if isinstance(value, ast.AST) and not isinstance(value, NO_SLOT):
                children.append(value)
            elif isinstance(value, list):
                children.extend(v for v in value if isinstance(v, ast.AST) and not isinstance(v, NO_SLOT))
        stack.extend(reversed(children))


def functions_covering(facts: FileFacts, line: int) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions whose definition spans `line`, innermost first."""
    funcs = [
        s
        for s in facts.statements
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and first_line(s) <= line <= (s.end_lineno or s.lineno)
    ]
    return sorted(funcs, key=lambda f: -f.lineno)  # innermost first
