"""Fit which evidence caps a patch below ``high`` on one set of real bugs, and report the fitted rule on another.

Issue 33's evidence (the behaviour probe, the second solution, the reviewer, the property test) gives each patch
reasons with codes. Which of the *evidence-against* codes should cap the confidence at ``medium`` is a choice the
data must make, not the author: too few caps and wrong patches reach ``high``; too many and correct ones fall
below it. This fits that choice on a calibration run (bench/calibration/tasks, bugs the benchmark never saw):

1. Each patch's level is recomputed from its recorded reasons: the reasons whose code is one of ``TUNABLE`` take
   the level the candidate rule gives them (``medium`` when the code caps, ``high`` when it does not); every other
   reason keeps its level.
2. Every subset of the ``TUNABLE`` codes that occur on at least ``MIN_SUPPORT`` patches is tried as "the codes
   that cap"; the fitted rule is the one with no partial or wrong patch at ``high`` and the most correct patches
   at ``high`` (ties: fewer caps). With no such rule, the one with the fewest wrong at ``high``. A code the
   fitting set shows less often keeps the product's level for it (``plausibility.PROBE_LEVELS``,
   ``REVIEW_LEVELS``): too little data, no change. ``--older`` fits the older codes below high the same way.
3. The fitted rule is then applied, unchanged, to the evaluation run (the 42 bugs of bench/realbugs): both sets'
   figures, each with its Wilson interval.

    python -m selfix_bench.calibrate --fit RUN_DIR --evaluate RUN_DIR [--reviews FILE ...]

A patch is correct when the run's scoring says so (same syntax tree as the developers' fix, or passing the fixed
commit's hidden tests) or a reviewed verdict read it correct (``--reviews``: ``{task: {patch digest: {verdict,
argument}}}``); partial or wrong otherwise. Only resolved patches count.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfix_action.repair.plausibility import PROBE_LEVELS, REVIEW_LEVELS
from selfix_bench.base import patch_digest
from selfix_bench.stats import wilson_interval

# The evidence-against codes whose level is fitted (plausibility.PROBE_LEVELS, the reviewer's verdicts).
TUNABLE = (
    "inputs_outside_failed",
    "inputs_outside_changed",
    "second_solution_differs",
    "review_partial",
    "review_wrong",
)
_ORDER = {"low": 0, "medium": 1, "high": 2}
# The older coverage signal, split by what the behaviour probe saw: passing tests run other lines after the patch,
# yet every call those tests made to the edited functions ends as before (the probe's summary says "none of them
# a passing test's call"). Then the changed lines change no outcome at the functions' boundary.
CALLS_KEPT = "p2p_behaviour_changed/calls_kept"
# A code the fitting set shows on fewer patches than this keeps its level (the product's, or for an older code the
# one it was recorded with): one to four patches are no evidence to lift a cap or add one.
MIN_SUPPORT = 5


@dataclass(frozen=True)
class Patch:
    task: str
    correct: bool
    reasons: tuple[tuple[str, str], ...]  # (code, level as recorded)

    def level(self, caps: frozenset[str], tunable: Iterable[str] = TUNABLE) -> str:
        """The patch's level when the codes in ``caps`` cap and the other tunable codes cap nothing (issue 33's
        codes cap at medium; an older one at the level it was recorded with)."""
        tuned = frozenset(tunable)
        levels = []
        for code, level in self.reasons:
            if code in TUNABLE:
                level = "medium" if code in caps else "high"
            elif code in tuned and code not in caps:
                level = "high"  # an older code lifted; capped, it keeps the level it was recorded with
            levels.append(level)
        return min(levels, key=lambda lv: _ORDER.get(lv, 0)) if levels else "low"


def patches(records: Iterable[Mapping[str, Any]], reviews: Mapping[str, Mapping[str, Any]]) -> list[Patch]:
    found = []
    for record in records:
        if not record.get("resolved"):
            continue
        review = reviews.get(str(record.get("id")), {}).get(patch_digest(str(record.get("patch", ""))), {})
        correct = bool(record.get("correct")) or review.get("verdict") == "correct"
        confidence = record.get("confidence") or {}
        recorded = confidence.get("reasons", [])
        kept = any(
            r.get("code") == "inputs_probed" and "none of them a passing test's call" in str(r.get("text", ""))
            for r in recorded
        )
        reasons = tuple(
            (
                CALLS_KEPT if kept and r.get("code") == "p2p_behaviour_changed" else str(r.get("code")),
                str(r.get("level")),
            )
            for r in recorded
        )
        found.append(Patch(str(record.get("id")), correct, reasons))
    return found


@dataclass(frozen=True)
class Figures:
    patches: int
    correct: int
    high: int
    high_correct: int

    @property
    def high_wrong(self) -> int:
        return self.high - self.high_correct

    def line(self, name: str) -> str:
        def rate(k: int, n: int) -> str:
            if n == 0:
                return "-"
            low, high = wilson_interval(k, n)
            return f"{k}/{n} = {100 * k / n:.1f}% ({100 * low:.1f}%-{100 * high:.1f}%)"

        return (
            f"| {name} | {self.patches} | {self.correct} | {self.high} | "
            f"{rate(self.high_correct, self.high)} | {rate(self.high_correct, self.correct)} | {self.high_wrong} |"
        )


def figures(found: Sequence[Patch], caps: frozenset[str], tunable: Iterable[str] = TUNABLE) -> Figures:
    tunable = tuple(tunable)
    high = [p for p in found if p.level(caps, tunable) == "high"]
    return Figures(
        patches=len(found),
        correct=sum(p.correct for p in found),
        high=len(high),
        high_correct=sum(p.correct for p in high),
    )


def product_levels() -> dict[str, str]:
    """The level the product gives each tunable code today (``review_<verdict>`` codes from REVIEW_LEVELS)."""
    levels = {code: str(level) for code, level in PROBE_LEVELS.items()}
    levels.update({f"review_{verdict}": str(level) for verdict, level in REVIEW_LEVELS.items()})
    return levels


def older_codes(found: Sequence[Patch]) -> tuple[str, ...]:
    """The codes below high ``found`` shows that are not issue 33's (coverage, patterns, localization...), the
    coverage signal split by the probe (``CALLS_KEPT``)."""
    return tuple(sorted({c for p in found for c, level in p.reasons if level != "high" and c not in TUNABLE}))


def fit(
    found: Sequence[Patch],
    defaults: Mapping[str, str] | None = None,
    tunable: Sequence[str] = TUNABLE,
    min_support: int = 1,
) -> frozenset[str]:
    """The codes that cap, fitted on ``found``: no wrong patch at high and the most correct ones there; ties to the
    fewer caps, then the alphabetical first (deterministic). A tunable code ``found`` never shows caps when its
    level in ``defaults`` is below high, and so does one it shows on fewer than ``min_support`` patches (an older
    code, not one of ``TUNABLE``, keeps the level it was recorded with)."""
    support = {code: sum(any(c == code for c, _ in p.reasons) for p in found) for code in tunable}
    present = sorted(code for code in tunable if support[code] >= min_support)
    kept = frozenset(
        code
        for code in tunable
        if code not in present and (code not in TUNABLE or (defaults or {}).get(code, "high") != "high")
    )
    best: tuple[tuple[int, int, int], frozenset[str]] | None = None
    for size in range(len(present) + 1):
        for combination in itertools.combinations(present, size):
            caps = frozenset(combination) | kept
            result = figures(found, caps, tunable)
            key = (-result.high_wrong, result.high_correct, -size)
            if best is None or key > best[0]:
                best = (key, caps)
    return best[1] if best is not None else frozenset()


def code_table(found: Sequence[Patch]) -> list[str]:
    """For every reason code below high that occurs: how many correct and how many partial or wrong patches carry
    it (what each piece of evidence against has meant on this set, the fixed ones included)."""
    counts: dict[str, list[int]] = {}
    for patch in found:
        for code in sorted({c for c, level in patch.reasons if level != "high" or c in TUNABLE}):
            counts.setdefault(code, [0, 0])[0 if patch.correct else 1] += 1
    rows = ["| reason | on correct patches | on partial or wrong patches |", "|---|---:|---:|"]
    rows += [f"| `{code}` | {right} | {wrong} |" for code, (right, wrong) in sorted(counts.items())]
    return rows


def _records(run: Path) -> list[dict[str, Any]]:
    path = run / "results.jsonl" if run.is_dir() else run
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", type=Path, required=True, help="the calibration run (a results folder or file)")
    parser.add_argument("--evaluate", type=Path, action="append", default=[], help="a run to report the rule on")
    parser.add_argument("--reviews", type=Path, action="append", default=[], help="reviewed verdicts (JSON)")
    parser.add_argument(
        "--older",
        action="store_true",
        help="also fit the older codes below high (coverage, patterns...)",
    )
    args = parser.parse_args(argv)
    reviews: dict[str, dict[str, Any]] = {}
    for path in args.reviews:
        for task, verdicts in json.loads(path.read_text(encoding="utf-8")).items():
            reviews.setdefault(task, {}).update(verdicts)
    fitted_on = patches(_records(args.fit), reviews)
    older = older_codes(fitted_on) if args.older else ()
    tunable = (*TUNABLE, *older)
    caps = fit(fitted_on, product_levels(), tunable, MIN_SUPPORT)
    print(f"fitted on {args.fit} ({len(fitted_on)} resolved patches): caps: {sorted(caps) or 'none'}")
    if args.older:
        lifted = sorted(set(older) - caps)
        print(f"older codes fitted too: lifted: {lifted or 'none'}")
    print("")
    print("| set | resolved patches | correct | high | high right (Wilson 95%) | correct at high | wrong at high |")
    print("|---|---:|---:|---:|---|---|---:|")
    print(figures(fitted_on, caps, tunable).line(f"fit: {args.fit.name}"))
    for run in args.evaluate:
        print(figures(patches(_records(run), reviews), caps, tunable).line(f"evaluate: {run.name}"))
    print("")
    print(f"What each reason meant on {args.fit.name}:")
    print("")
    print("\n".join(code_table(fitted_on)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
