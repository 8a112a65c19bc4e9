"""Benchmark the offline engine on the bundled examples.

For each example it heals a fresh copy twice in the same run: with selfix's verification path (F2P first with
early stop, then only the P2P tests that cover the edited function, whole suite once for the winner) and with the
naive path (whole suite for every candidate). It prints time to a verified patch and test runs for both, the
medians, and the naive/selective ratio.

    .venv/bin/python -m selfix_bench.bench_examples [--repeat N] [EXAMPLE ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from selfix_action.repair.loop import LoopConfig
from selfix_bench.healing import EXAMPLES, heal_copy


def heal_once(example: Path, naive: bool) -> tuple[float, int, int, bool, str]:
    """One heal of a fresh copy through the product's pipeline: seconds, test runs, candidates, healed, diff."""
    elapsed, outcome = heal_copy(example, LoopConfig(full_suite_per_candidate=naive))
    report = outcome.report
    diff = report.patch.diff if report.patch else ""
    return elapsed, report.test_runs, report.candidates_tried, report.patch is not None, diff


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", help="example names (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per example and path (median taken)")
    args = parser.parse_args(argv)
    names = args.examples or sorted(p.name for p in EXAMPLES.iterdir() if (p / "tests").is_dir())

    header = f"{'example':<16} {'healed':>6} {'cands':>5} {'sel s':>7} {'sel runs':>8} {'naive s':>8} "
    header += f"{'naive runs':>10} {'ratio':>6} {'same':>5}"
    print(header)
    rows = []
    for name in names:
        selective, naive = [], []
        for _ in range(args.repeat):
            selective.append(heal_once(EXAMPLES / name, naive=False))
            naive.append(heal_once(EXAMPLES / name, naive=True))
        sel_time = statistics.median(r[0] for r in selective)
        naive_time = statistics.median(r[0] for r in naive)
        sel, nai = selective[0], naive[0]
        same = sel[4] == nai[4]  # both paths must reach the same patch
        rows.append((name, sel[3], sel_time, sel[1], naive_time, nai[1], same, sel[2]))
        print(
            f"{name:<16} {'yes' if sel[3] else 'NO':>6} {sel[2]:>5} {sel_time:>7.2f} {sel[1]:>8} "
            f"{naive_time:>8.2f} {nai[1]:>10} {naive_time / sel_time:>6.2f} {'yes' if same else 'NO':>5}",
            flush=True,
        )
    healed = sum(1 for r in rows if r[1])
    med_sel = statistics.median(r[2] for r in rows)
    med_naive = statistics.median(r[4] for r in rows)
    print()
    print(f"healed: {healed}/{len(rows)}")
    print(f"median time to verified patch: selective {med_sel:.2f}s, naive {med_naive:.2f}s")
    print(
        f"median test runs: selective {statistics.median(r[3] for r in rows)}, "
        f"naive {statistics.median(r[5] for r in rows)}"
    )
    total_sel = sum(r[2] for r in rows)
    total_naive = sum(r[4] for r in rows)
    print(
        f"total time: selective {total_sel:.2f}s, naive {total_naive:.2f}s, ratio naive/selective "
        f"{total_naive / total_sel:.2f}x"
    )
    print(f"same patch on both paths: {sum(1 for r in rows if r[6])}/{len(rows)}")
    return 0 if healed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
