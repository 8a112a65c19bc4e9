"""What honest verdicts cost and say on the bundled examples.

For each example it heals a fresh copy twice in the same run: taking the first passing candidate without coverage
on the confirmation (``LoopConfig(alternatives=0, behaviour_coverage=False)``: the loop as it was before the
window of alternatives, static sanity aside) and with the default configuration (the most plausible of a window
of passing candidates, confirmed with per-test coverage). It prints candidates, test runs and seconds of both,
the default's confidence level and the reasons that kept it from high, whether both found the same patch, and
the median ratios default/first.

    .venv/bin/python -m selfix_bench.bench_verdicts [--repeat N] [EXAMPLE ...]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path

from selfix_action.repair.loop import LoopConfig
from selfix_action.repair.report import HealReport
from selfix_bench.healing import EXAMPLES, heal_copy

FIRST_PASSING = LoopConfig(alternatives=0, behaviour_coverage=False)


def heal_once(example: Path, config: LoopConfig) -> tuple[float, HealReport]:
    """One heal of a fresh copy through the product's pipeline: its seconds and report."""
    elapsed, outcome = heal_copy(example, config)
    return elapsed, outcome.report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", help="example names (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per example and configuration (median taken)")
    args = parser.parse_args(argv)
    names = args.examples or sorted(p.name for p in EXAMPLES.iterdir() if (p / "tests").is_dir())
    print(f"{'example':<16} {'cands':>11} {'runs':>9} {'seconds':>13} {'same':>5} {'refused':>7}  confidence")
    cand_ratios, time_ratios, all_healed = [], [], True
    for name in names:
        first = [heal_once(EXAMPLES / name, FIRST_PASSING) for _ in range(args.repeat)]
        default = [heal_once(EXAMPLES / name, LoopConfig()) for _ in range(args.repeat)]
        f_report, d_report = first[0][1], default[0][1]
        f_secs = statistics.median(t for t, _ in first)
        d_secs = statistics.median(t for t, _ in default)
        healed = f_report.patch is not None and d_report.patch is not None
        all_healed &= healed and d_report.stop_reason.value == "healed"
        same = healed and f_report.patch.diff == d_report.patch.diff  # type: ignore[union-attr]
        confidence = d_report.confidence
        why = "; ".join(r.code for r in confidence.reasons if r.level != "high") if confidence else "no patch"
        level = confidence.level if confidence else "-"
        print(
            f"{name:<16} {f_report.candidates_tried:>4} -> {d_report.candidates_tried:<4} "
            f"{f_report.test_runs:>3} -> {d_report.test_runs:<3} {f_secs:>5.1f} -> {d_secs:<5.1f} "
            f"{'yes' if same else 'NO':>5} {d_report.candidates_rejected_static:>7}  {level} {why}"
        )
        cand_ratios.append(d_report.candidates_tried / max(1, f_report.candidates_tried))
        time_ratios.append(d_secs / f_secs if f_secs else 1.0)
    print(
        f"median ratio default/first-passing: candidates {statistics.median(cand_ratios):.2f}, "
        f"time {statistics.median(time_ratios):.2f}; all healed: {all_healed}"
    )
    return 0 if all_healed else 1


if __name__ == "__main__":
    raise SystemExit(main())
