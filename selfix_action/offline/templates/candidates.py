"""The pipeline: find the mutation targets at each suspicious line, run the registry's families on
them, then rank, verify and deduplicate the mutations into SourceEdits."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from selfix_action.offline.spans import change_size
from selfix_action.offline.templates.analysis import FileFacts, parse_source
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.hints import NO_HINTS, Hints
from selfix_action.offline.templates.registry import EXPRESSION_FAMILIES, FUNCTION_FAMILIES, STATEMENT_FAMILIES
from selfix_action.offline.templates.render import Renderer, SourceEdit
from selfix_action.offline.templates.targeting import condition_nodes, functions_covering, targets, walk_expr
from selfix_action.offline.templates.values import Mutation


@functools.cache
def _expression_families(kind: type[ast.AST], is_test: bool) -> tuple[Family[Any], ...]:
    # Every node of a file is dispatched; filtering the registry once per node type keeps that cheap.
    return tuple(family for family in EXPRESSION_FAMILIES if family.applies_to(kind, is_test))


@functools.cache
def _statement_families(kind: type[ast.AST]) -> tuple[Family[Any], ...]:
    return tuple(family for family in STATEMENT_FAMILIES if family.applies_to(kind, False))


def family_mutations(ctx: Context, line: int) -> Iterator[tuple[Family[Any], Mutation | None]]:
    """Every mutation the registry's families propose at `line`, in dispatch order, with its family."""
    for target, roots in targets(ctx.facts, line):
        tests = {id(t) for t in condition_nodes(target)}
        for root in roots:
            for node in walk_expr(root):
                # A class is hashable; mypy checks the class's unbound __hash__ against Hashable.
                for family in _expression_families(type(node), id(node) in tests):  # type: ignore[arg-type]
                    for mutation in family.generate(ctx, node):
                        yield family, mutation
        if isinstance(target, ast.stmt):
            for family in _statement_families(type(target)):  # type: ignore[arg-type]  # as above
                for mutation in family.generate(ctx, target):
                    yield family, mutation
    for func in functions_covering(ctx.facts, line):
        for family in FUNCTION_FAMILIES:
            if family.applies_to(type(func), False):
                for mutation in family.generate(ctx, func):
                    yield family, mutation


def candidate_edits(
    source: str, path: str, lines: Sequence[int], *, max_per_line: int = 400, hints: Hints = NO_HINTS
) -> list[SourceEdit]:
    """Candidate one-statement fixes at the given suspicious lines (`hints`: what the failing run
    tells besides, for the families that use it).

    Grouped by line in the given order; within a line sorted by prior (descending), then by the
    size of the textual change. Every edit parses, differs semantically from the original, and
    is unique by normalized AST across the whole result (the first occurrence is kept).
    """
    parsed = parse_source(source)
    if parsed is None:
        return []
    bom, text, tree = parsed
    facts = FileFacts(text, path, tree)
    ctx = Context(facts, Renderer(facts), hints)
    seen = {ctx.render.original_dump}
    results: list[SourceEdit] = []
    done_lines: set[int] = set()
    for line in lines:
        if line in done_lines or not 1 <= line <= facts.lines.line_count:
            continue
        done_lines.add(line)
        results.extend(_edits_for_line(ctx, line, seen, max_per_line))
    if bom:
        results = [replace(edit, new_source=bom + edit.new_source) for edit in results]
    return results


def _edits_for_line(ctx: Context, line: int, seen: set[str], limit: int) -> list[SourceEdit]:
    render = ctx.render
    mutations = [m for _, m in family_mutations(ctx, line) if m is not None]
    for mutation in mutations:
        mutation.expected = render.expected_dump(mutation)
        mutation.sort_size = change_size(render.source, mutation.tries[0])
    # Verify in final order so the best-ranked rendering of each distinct program wins.
    mutations.sort(key=lambda m: (-m.template.prior, m.sort_size))
    accepted: list[tuple[float, int, int, SourceEdit]] = []
    for order, mutation in enumerate(mutations):
        if len(accepted) >= limit:
            break
        if mutation.expected in seen:
            continue
        for edits in mutation.tries:
            rendered = render.render(edits)
            if rendered is None or rendered[1] != mutation.expected:
                continue
            new_source, normalized = rendered
            seen.add(normalized)
            edit = render.source_edit(mutation, edits, new_source, normalized)
            size = change_size(render.source, edits)
            accepted.append((-edit.prior, size, order, edit))
            break
    accepted.sort(key=lambda item: item[:3])
    return [item[3] for item in accepted]
