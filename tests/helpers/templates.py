"""Shared by the template tests: run a fixed module, and find the candidate that makes a given fix."""

from __future__ import annotations

import ast
import functools
from typing import Any

from selfix_action.offline.templates import Hints, SourceEdit, candidate_edits
from selfix_action.offline.templates.hints import NO_HINTS

PATH = "pkg/mod.py"


def load(source: str) -> dict[str, Any]:
    """Execute a (fixed) module and return its namespace: the proof that the fix works."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<fixed>", "exec"), namespace)
    return namespace


def fix(source: str, line: int, expected: str, template: str | None = None, hints: Hints = NO_HINTS) -> SourceEdit:
    """The candidate at `line` that turns `source` into `expected` (compared by AST).

    Also asserts the rendering is byte-identical to `expected`, i.e. nothing outside the edited
    span changed: comments, odd spacing, blank lines and line endings all survive.
    """
    edits = candidate_edits(source, PATH, [line], hints=hints)
    wanted = ast.dump(ast.parse(expected.removeprefix("\ufeff")))
    matches = [e for e in edits if e.normalized == wanted]
    assert matches, f"fix not proposed; got: {[e.description for e in edits]}"
    edit = matches[0]
    assert edit.new_source == expected
    assert edit.path == PATH
    if template is not None:
        assert edit.template == template, edit.description
    return edit


# A realistic function where most templates fire: for the ordering, bounds and registry tests.
REALISTIC = '''"""Inventory helpers."""

from collections import Counter

DEFAULT_UNITS = ("kg", "g", "lb")


def restock_report(items, threshold=5, units="kg"):
    """Summarize stock below `threshold` for the given units."""
    counts = Counter()
    low = []
    total = 0
    for index, item in enumerate(items):
        name = item["name"].strip().lower()
        qty = item.get("qty", 0)
        if item.get("unit", units) not in DEFAULT_UNITS:
            continue
        counts[name] += qty
        total += qty
        if qty < threshold and name not in low:
            low.append(name)
        elif qty > threshold * 10:
            counts[name] -= qty // 2
    ratio = len(low) / max(len(items), 1)
    lines = [f"{name}: {counts[name]}" for name in sorted(low)]
    if ratio > 0.5 and total:
        lines.insert(0, "WARNING: most items are low")
    summary = {"low": low, "total": total, "ratio": round(ratio, 2)}
    return summary, "\\n".join(lines[:-1])
'''


@functools.cache
def realistic(line: int) -> tuple[SourceEdit, ...]:
    return tuple(candidate_edits(REALISTIC, PATH, [line]))
