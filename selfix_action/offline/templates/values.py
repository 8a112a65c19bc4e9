"""The two values every stage shares: a template (a kind of edit and its prior) and a mutation (one
candidate edit of that kind, before it is verified). They live apart so analysis, rendering, the
template families and the registry can all use them without importing one another."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from selfix_action.offline.spans import TextEdit


@dataclass(frozen=True)
class Template:
    """A kind of one-statement fix, e.g. "binop_replace"; candidates carry its id and prior."""

    id: str  # SourceEdit.template: what the memory (selfix_action.learn) and the bench key on
    prior: float  # in (0, 1]: higher = fixes real one-statement bugs more often
    summary: str  # what the edit changes, for readers of the registry


@dataclass
class Mutation:
    """One candidate edit before verification."""

    template: Template
    tries: list[list[TextEdit]]  # alternative renderings; the first that round-trips wins
    apply: Callable[[], Callable[[], None]]  # mutate the shared tree in place; returns undo
    sites: list[ast.AST]  # original nodes changed in place: they and their ancestors get re-dumped
    description: str | None = None  # None: derived from the edited text
    focus: tuple[int, int] | None = None  # span of the replaced node, for the description
    expected: str = field(default="", init=False)
    sort_size: int = field(default=0, init=False)
