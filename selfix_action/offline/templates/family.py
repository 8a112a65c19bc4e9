"""The contract of a template family: a generator of candidate mutations for one kind of site, and
the templates (ids and priors) its candidates carry. Family modules declare these; `registry` lists
them in dispatch order and `candidates` walks that list."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from selfix_action.offline.templates.analysis import FileFacts
from selfix_action.offline.templates.hints import NO_HINTS, Hints
from selfix_action.offline.templates.render import Renderer
from selfix_action.offline.templates.values import Mutation, Template

# Where a family applies, at a suspicious line:
#   "expression": each mutable expression of the statements covering the line (`kinds` filters by type)
#   "test": the same, but only expressions used as truth tests (if/while/assert tests, guards, ...)
#   "statement": each statement covering the line (not `except` clauses or `case`s)
#   "function": each function whose definition spans the line, innermost first
Site = Literal["expression", "test", "statement", "function"]

N = TypeVar("N", bound=ast.AST)


@dataclass(frozen=True)
class Context:
    """What a generator gets besides its node: the file's facts, the way to render edits, and what
    the failing run tells beyond the suspicious lines (empty unless the engine passes it)."""

    facts: FileFacts
    render: Renderer
    hints: Hints = NO_HINTS


@dataclass(frozen=True)
class Family(Generic[N]):
    """One generator of candidates, and the templates those candidates may carry.

    `generate` may yield None for a candidate it could not place (it is dropped); it must only
    yield mutations of the templates it declares (the tests check this on real code).
    """

    name: str
    site: Site
    kinds: tuple[type[N], ...]  # node types `generate` is called with
    templates: tuple[Template, ...]
    generate: Callable[[Context, N], Iterable[Mutation | None]]

    def applies_to(self, kind: type[ast.AST], is_test: bool) -> bool:
        """Does this family run on nodes of type `kind` (`is_test`: used as a truth test)?"""
        return issubclass(kind, self.kinds) and (self.site != "test" or is_test)
