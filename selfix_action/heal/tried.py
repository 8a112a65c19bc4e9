"""What the offline templates already tried, summarized past the ones listed one by one: every candidate is
counted in a place the model can read (where, which templates, how they failed), never "... and 88 more"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from selfix_action.repair.values import CandidatePatch, Hypothesis, Verification

# Past this many places, the rest is summarized per file (how many candidates at which lines), not per line.
MAX_SUMMARY_PLACES = 15


def summarize_tried(
    rest: Sequence[tuple[Hypothesis, CandidatePatch]], verdicts: Mapping[str, Verification]
) -> list[str]:
    """Lines summarizing ``rest`` (the tried candidates not listed one by one): per place, how many, with which
    templates and at which verification stage they failed; per file when there are many places."""
    if not rest:
        return []
    places: dict[tuple[str, int], list[CandidatePatch]] = {}
    for hypothesis, candidate in rest:
        places.setdefault((hypothesis.file, candidate.line), []).append(candidate)
    lines = [f"- the other {len(rest)} candidate edit(s), by place:"]
    if len(places) <= MAX_SUMMARY_PLACES:
        for (path, line), candidates in places.items():
            where = f"{path}:{line}" if line else path
            lines.append(f"  - {where}: {_counted(candidates, verdicts)}")
        return lines
    by_file: dict[str, list[tuple[int, CandidatePatch]]] = {}
    for (path, line), candidates in places.items():
        by_file.setdefault(path, []).extend((line, c) for c in candidates)
    for path, items in by_file.items():
        at = sorted({line for line, _ in items if line})
        span = f" at lines {at[0]}-{at[-1]} ({len(at)} lines)" if at else ""
        lines.append(f"  - {path}{span}: {_counted([c for _, c in items], verdicts)}")
    return lines


def _counted(candidates: Sequence[CandidatePatch], verdicts: Mapping[str, Verification]) -> str:
    templates = Counter(c.template for c in candidates)
    stages = Counter(verdicts[c.id].stage.value if c.id in verdicts else "not verified (skipped)" for c in candidates)
    names = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in sorted(templates.items()))
    how = ", ".join(
        f"{n} {stage}" if stage.startswith("not") else f"{n} failed at {stage}" for stage, n in sorted(stages.items())
    )
    return f"{len(candidates)} ({names}); {how}"
