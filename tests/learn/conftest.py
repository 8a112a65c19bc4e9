"""Shared data for the learning-layer tests: the fixture traces (offline runs of every bundled example and a
scripted-model run of the seed walk-through, regenerated with ``python -m tests.learn.scripted``)."""

from __future__ import annotations

from pathlib import Path

TRACES = Path(__file__).parent / "fixtures" / "traces"
