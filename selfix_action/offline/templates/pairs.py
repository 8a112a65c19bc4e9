"""Pairs of edits: a bug that needs two changes (both branches of a condition, a value and the
check on it) is fixed by no single candidate. The best few single edits of the two most suspicious
lines are combined, each pair rendered and verified like any candidate; the engine tries them after
the single edits, since a pair is rarely needed and `per_line`² of them are many.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.analysis import FileFacts, parse_source
from selfix_action.offline.templates.render import Renderer, SourceEdit
from selfix_action.offline.templates.values import Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# no fix was two reproduced single edits, so it has the smoothed floor; a pair is tried only once the single edits
# are spent anyway.
EDIT_PAIR = Template("edit_pair", 0.099, "two single edits at the two most suspicious lines, together")

PER_LINE = 4  # best single edits of each line combined: at most PER_LINE² pairs


def text_edit(source: str, new_source: str) -> TextEdit:
    """The one contiguous edit that turns `source` into `new_source` (the shortest such span)."""
    limit = min(len(source), len(new_source))
    prefix = 0
    while prefix < limit and source[prefix] == new_source[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and source[-1 - suffix] == new_source[-1 - suffix]:
        suffix += 1
    return TextEdit(prefix, len(source) - suffix, new_source[prefix : len(new_source) - suffix])


def best(edits: Sequence[SourceEdit], count: int) -> list[SourceEdit]:
    """The `count` likeliest single edits of one line: by prior shared among a template's variants
    (a lone operator swap before the 8th renamed identifier), then in the given order."""
    fan_out = Counter(edit.template for edit in edits)
    ranked = sorted(enumerate(edits), key=lambda item: (-item[1].prior / fan_out[item[1].template], item[0]))
    return [edit for _, edit in ranked if edit.template != EDIT_PAIR.id][:count]


def pair_edits(
    source: str,
    path: str,
    first: Sequence[SourceEdit],
    second: Sequence[SourceEdit],
    *,
    per_line: int = PER_LINE,
) -> list[SourceEdit]:
    """Every verified combination of one of `first`'s best edits with one of `second`'s (`best`), the
    first line's best first; pairs whose edits overlap or touch are left out."""
    parsed = parse_source(source)
    if parsed is None:
        return []
    bom, text, tree = parsed
    render = Renderer(FileFacts(text, path, tree))
    singles = {edit.normalized for edit in (*first, *second)}
    seen = {render.original_dump}
    out: list[SourceEdit] = []
    for a, b in itertools.product(best(first, per_line), best(second, per_line)):
        ea, eb = text_edit(text, a.new_source[len(bom) :]), text_edit(text, b.new_source[len(bom) :])
        if not (ea.end < eb.start or eb.end < ea.start):
            continue  # the same span, or edits that would merge into one
        rendered = render.render(sorted((ea, eb), key=lambda e: e.start))
        if rendered is None:
            continue
        new_source, normalized = rendered
        if normalized in seen or normalized in singles:
            continue
        seen.add(normalized)
        out.append(
            SourceEdit(
                path=path,
                template=EDIT_PAIR.id,
                description=f"{a.description}; and {b.description}",
                line=min(a.line, b.line),
                prior=EDIT_PAIR.prior,
                new_source=bom + new_source,
                normalized=normalized,
            )
        )
    return out
