"""What a project's own pytest configuration costs a heal: the same example healed with and without CI-style
``addopts`` (pytest-xdist's workers, pytest-randomly, pytest-rerunfailures), side by side in one run.

    selfix bench addopts [EXAMPLE ...] [--addopts "-n 2 -p randomly"] [--repeat N]

Each heal goes through the product's pipeline (``heal_copy``) on a fresh copy of the example, the options written
into its ``[tool.pytest.ini_options]``. It prints the heal times, their ratio, and how the test runs ran (hot
checks, fork-per-run, fresh ``pytest`` processes) with what selfix overrode of the configuration. A measurement,
not a test: the plugins must be installed in this interpreter's environment (the dev extra has them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from selfix_action.heal import HealOutcome
from selfix_bench.healing import EXAMPLES, heal_copy

DEFAULT_ADDOPTS = ("-n 2 -p randomly", "-n 2 -p randomly --reruns 2")
SECTION = "[tool.pytest.ini_options]"


def with_addopts(addopts: str) -> Callable[[Path], None]:
    """``heal_copy``'s prepare step: the options as the copy's ``addopts`` (its pyproject.toml's pytest table)."""

    def prepare(repo: Path) -> None:
        if not addopts:
            return
        pyproject = repo / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else SECTION + "\n"
        if SECTION not in text:
            text += f"\n{SECTION}\n"
        line = "addopts = " + '"' + addopts.replace("\\", "\\\\").replace('"', '\\"') + '"'
        pyproject.write_text(text.replace(SECTION, f"{SECTION}\n{line}", 1), encoding="utf-8")

    return prepare


def heal_once(example: Path, addopts: str) -> tuple[float, HealOutcome]:
    return heal_copy(example, prepare=with_addopts(addopts))


def _runs(outcome: HealOutcome) -> str:
    kinds = outcome.report.process_runs
    return f"{kinds.get('hot', 0)}/{kinds.get('warm', 0)}/{kinds.get('cold', 0)}"


def main(
    argv: Sequence[str] | None = None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> int:
    parser = parser_class(prog="selfix bench addopts", description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", default=["range_sum"], help="bundled examples (default: range_sum)")
    parser.add_argument(
        "--addopts",
        action="append",
        help=f"options to heal with beside none (repeatable; default: {' and '.join(map(repr, DEFAULT_ADDOPTS))})",
    )
    parser.add_argument("--repeat", type=int, default=1, help="heals per example and options (the median is shown)")
    args = parser.parse_args(argv)
    variants = ["", *(args.addopts or DEFAULT_ADDOPTS)]
    print("example        addopts                        healed cands  seconds  ratio hot/warm/cold")
    worst = 0.0
    all_healed = True
    for name in args.examples:
        base = 0.0
        for addopts in variants:
            heals = [heal_once(EXAMPLES / name, addopts) for _ in range(max(1, args.repeat))]
            seconds = statistics.median(s for s, _ in heals)
            outcome = heals[0][1]
            base = base or seconds
            ratio = seconds / base
            worst = max(worst, ratio)
            all_healed = all_healed and all(o.healed for _, o in heals)
            report = outcome.report
            print(
                f"{name:<14} {addopts or '(none)':<30} {'yes' if outcome.healed else 'NO':>6} "
                f"{report.candidates_tried:>5} {seconds:>8.2f} {ratio:>5.2f}x {_runs(outcome):>13}",
                flush=True,
            )
            for note in report.pytest_overrides:
                print(f"{'':<14}   overrode: {note}")
    print(f"\nworst heal time with addopts / without: {worst:.2f}x (target: within 1.5x)")
    return 0 if all_healed else 1


if __name__ == "__main__":
    sys.exit(main())
