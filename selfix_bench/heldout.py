"""The held-out small algorithm bugs: is ``high`` right? (issue 21: high must be unreachable for a patch the
tests barely constrain)

    python -m selfix_bench.heldout bench/heldout [--engine offline]

Twelve small modules (``bench/heldout/<name>/algo.py``), each with one injected bug and one to three thin tests,
written before any heal ran. Each is healed by the product's pipeline on a scratch copy; the patched function is
then checked, in a process of its own, against a reference implementation on hundreds of inputs
(``bench/heldout/oracles.py``): right when it agrees on every one. Prints each bug's verdict and confidence, and
P(right | level).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfix_action.errors import SelfixError
from selfix_action.heal import EngineChoice, HealRequest, heal
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits, run_process
from selfix_bench.stats import wilson_interval


def judge(folder: Path, files: dict[str, str], workdir: Path) -> bool:
    """Does the patched ``algo.py`` agree with the reference on every input? (None patched: the bug stays.)"""
    patched = workdir / "patched"
    shutil.copytree(folder, patched)
    for path, text in files.items():
        (patched / path).write_text(text, encoding="utf-8")
    result = run_process(
        [sys.executable, str(folder.resolve().parent / "oracles.py"), folder.name, str(patched)],
        cwd=workdir,
        env={"PATH": "/usr/bin:/bin"},
        limits=Limits(wall_seconds=60),
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SelfixError(f"the reference check of {folder.name} gave no verdict: {result.stderr[-500:]}")
    return json.loads(lines[-1])["mismatches"] == 0


def run(root: Path, engine: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for folder in sorted(p for p in root.iterdir() if (p / "algo.py").is_file()):
        with tempfile.TemporaryDirectory(prefix="selfix-heldout-") as tmp:
            repo = Path(tmp) / folder.name
            shutil.copytree(folder, repo)
            outcome = heal(
                HealRequest(
                    repo=repo,
                    test_cmd=(sys.executable, "-m", "pytest"),
                    out_dir=Path(tmp) / "out",
                    engine=EngineChoice(kind=engine),
                    limits=Limits(wall_seconds=60),
                    isolation=IsolationConfig(mode="none"),
                    repo_label=folder.name,
                )
            )
            report = outcome.report
            level = report.confidence.level if report.confidence is not None else "-"
            right = judge(folder, dict(outcome.result.files or {}), Path(tmp)) if outcome.healed else None
            records.append(
                {
                    "bug": folder.name,
                    "stop": report.stop_reason.value,
                    "level": level,
                    "right": right,
                    "lowered_by": [r.code for r in report.confidence.reasons if r.level != "high"]
                    if report.confidence
                    else [],
                }
            )
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, nargs="?", default=Path("bench/heldout"))
    parser.add_argument("--engine", default="offline")
    args = parser.parse_args(argv)
    records = run(args.root, args.engine)
    print("| bug | stop | confidence | patch | lowered by |\n|---|---|---|---|---|")
    for r in records:
        verdict = "-" if r["right"] is None else "right" if r["right"] else "WRONG"
        print(f"| {r['bug']} | {r['stop']} | {r['level']} | {verdict} | {', '.join(r['lowered_by'])} |")
    print()
    for level in ("high", "medium", "low"):
        group = [r for r in records if r["level"] == level and r["right"] is not None]
        right = sum(1 for r in group if r["right"])
        lo, hi = wilson_interval(right, len(group))
        print(
            f"{level}: {len(group)} patch(es), {right} right ({lo:.0%}-{hi:.0%} Wilson)" if group else f"{level}: none"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
