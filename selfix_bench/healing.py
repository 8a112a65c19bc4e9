"""How the benchmark heals: always through the product's pipeline (``heal`` and its ``heal_in_sandbox`` step),
never a hand-built sandbox and loop, so every figure measures what a user runs.

``heal_with`` runs a ``HealRequest``, with an engine object in place of the request's engine when a measurement
brings its own (a scripted model, an engine that records what it is given); ``heal_copy`` heals a fresh copy of a
folder (a bundled example) and times it.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from selfix_action.heal import HealContext, HealOutcome, HealRequest, heal, heal_in_sandbox
from selfix_action.repair.loop import HealResult, LoopConfig
from selfix_action.repair.protocols import Engine
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def heal_with(request: HealRequest, engine: Engine | None = None) -> HealOutcome:
    """The product's heal of ``request``; ``engine``: this engine object instead of the one the request names."""
    if engine is None:
        return heal(request)
    chosen = engine

    def healer(context: HealContext) -> HealResult:
        return heal_in_sandbox(dataclasses.replace(context, engine=chosen))

    return heal(request, healer=healer)


def heal_copy(
    source: Path,
    loop: LoopConfig | None = None,
    *,
    engine: Engine | None = None,
    wall_seconds: float = 30.0,
    prepare: Callable[[Path], None] | None = None,
) -> tuple[float, HealOutcome]:
    """Heal a fresh copy of ``source`` (this interpreter's pytest, no isolation, the offline engine unless
    ``engine``): the seconds the heal took and its outcome. ``prepare`` edits the copy first."""
    with tempfile.TemporaryDirectory(prefix="selfix-bench-") as tmp:
        repo = Path(tmp) / source.name
        shutil.copytree(source, repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
        if prepare is not None:
            prepare(repo)
        request = HealRequest(
            repo=repo,
            test_cmd=(sys.executable, "-m", "pytest"),
            out_dir=Path(tmp) / "out",
            loop=loop or LoopConfig(),
            limits=Limits(wall_seconds=wall_seconds),
            isolation=IsolationConfig(mode="none"),
            repo_label=source.name,
        )
        started = time.perf_counter()
        outcome = heal_with(request, engine)
        return time.perf_counter() - started, outcome
