"""Rendering: a mutation becomes a *minimal text edit* of the original file (only the mutated span
changes, so comments, spacing and line endings survive), and is verified: the edited text must parse
to exactly the AST we meant to build. When the compact rendering does not round-trip (for example an
operand needs parentheses), `Renderer.replace` also offers `ast.unparse` of the new node, with and
without parentheses; a mutation none of whose renderings round-trips is dropped.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from selfix_action.offline.spans import IncrementalDump, TextEdit, operator_span, shorten
from selfix_action.offline.templates.analysis import FileFacts
from selfix_action.offline.templates.values import Mutation, Template


@dataclass(frozen=True)
class SourceEdit:
    path: str  # repo-relative posix path (passed in, echoed back)
    template: str  # template id, e.g. "binop_replace", "off_by_one", "mutable_default"
    description: str  # human text, e.g. "line 4: replace `total // count` with `total / count`"
    line: int  # 1-based first line changed
    prior: float  # template prior in (0, 1]: higher = fixes real one-statement bugs more often
    new_source: str  # the whole file's new text; identical to the original outside the edited span(s)
    normalized: str  # ast.dump(ast.parse(new_source)) so equivalent edits can be deduplicated


# ----------------------------------------------------------------------------- precedence
# Precedence levels decide where a compact rendering needs parentheses (higher binds tighter).
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
PREC_AND = 4
PREC_NOT = 5
PREC_ADD = 11
_PREC_UNARY = 13


def prec(node: ast.AST) -> int:
    """Python operator precedence of an expression (higher binds tighter)."""
    if isinstance(node, ast.NamedExpr | ast.Tuple | ast.Starred | ast.Yield | ast.YieldFrom):
        return 0
    if isinstance(node, ast.Lambda):
        return 1
    if isinstance(node, ast.IfExp):
        return 2
    if isinstance(node, ast.BoolOp):
        return 3 if isinstance(node.op, ast.Or) else PREC_AND
    if isinstance(node, ast.UnaryOp):
        return PREC_NOT if isinstance(node.op, ast.Not) else _PREC_UNARY
    if isinstance(node, ast.Compare):
        return 6
    if isinstance(node, ast.BinOp):
        return _BINOP_PREC.get(type(node.op), 12)
    if isinstance(node, ast.Await):
        return 15
    return 16


def int_node(value: int) -> ast.expr:
    """An int literal shaped the way the parser would produce it."""
    # Negative literals parse as UnaryOp(USub, Constant), so build them that way to round-trip.
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value))
    return ast.Constant(value=value)


# ------------------------------------------------------------------------------- renderer
class Renderer:
    """Text renderings of a file's nodes, in-place tree mutations, and their verification."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.source = facts.source
        self.lines = facts.lines
        self.dumper = IncrementalDump(facts.tree, facts.lines)
        self.original_dump = self.dumper.original

    def text(self, node: ast.AST) -> str:
        """The node's exact source text."""
        return self.lines.segment(node)

    def paren(self, node: ast.AST, min_prec: int) -> str:
        """The node's text, parenthesized when it binds looser than `min_prec`."""
        text = self.text(node)
        return f"({text})" if prec(node) < min_prec else text

    def op_edit(self, left: ast.AST, right: ast.AST, symbol: str) -> list[TextEdit] | None:
        """Edit replacing just the operator token between two operands."""
        gap = operator_span(self.source, self.lines.span(left)[1], self.lines.span(right)[0])
        if gap is None:
            return None
        return [TextEdit(gap[0], gap[1], symbol)]

    def swap(self, node: ast.AST, new: ast.AST) -> Callable[[], Callable[[], None]]:
        """An `apply` that puts `new` in `node`'s parent slot (and returns the undo)."""
        parent, name, index = self.facts.parents[id(node)]

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

    def replace(
        self,
        template: Template,
        node: ast.AST,
        new: ast.AST,
        text: str | None = None,
        preferred: Sequence[list[TextEdit]] = (),
    ) -> Mutation | None:
        """Replace `node` by `new`; renderings tried: preferred edits, `text`, then unparse."""
        if id(node) not in self.facts.parents:
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
        mutation = Mutation(template, tries, self.swap(node, new), [node])
        mutation.focus = (start, end)
        return mutation

    # ---------------------------------------------------------------------------- verification
    def expected_dump(self, mutation: Mutation) -> str:
        """Dump of the tree we intend to produce (the mutation applied to the original AST)."""
        dirty: set[int] = set()
        for site in mutation.sites:
            dirty.add(id(site))
            dirty.update(id(ancestor) for ancestor in self.facts.ancestors(site))
        undo = mutation.apply()
        try:
            return self.dumper.mutated(dirty)
        finally:
            undo()

    def render(self, edits: list[TextEdit]) -> tuple[str, str] | None:
        """New source and its normalized dump, or None when it does not parse."""
        return self.dumper.render(edits)

    def source_edit(self, mutation: Mutation, edits: list[TextEdit], new_source: str, normalized: str) -> SourceEdit:
        """The verified rendering as a SourceEdit, described by the text it changes."""
        source = self.source
        start = min(e.start for e in edits)
        end = max(e.end for e in edits)
        line = self.lines.line_of(start)
        description = mutation.description
        if description is None:
            if mutation.focus is not None and mutation.focus[0] <= start and end <= mutation.focus[1]:
                start, end = mutation.focus  # describe the whole mutated expression, not just a token
            delta = sum(len(e.text) - (e.end - e.start) for e in edits)
            old, new = source[start:end], new_source[start : end + delta]
            description = f"replace `{shorten(old)}` with `{shorten(new)}`"
        return SourceEdit(
            path=self.facts.path,
            template=mutation.template.id,
            description=f"line {line}: {description}",
            line=line,
            prior=mutation.template.prior,
            new_source=new_source,
            normalized=normalized,
        )
