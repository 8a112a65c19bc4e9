"""For the learning-layer tests: the fixture traces (offline runs of every bundled example and a scripted-model
run of the seed walk-through, regenerated with ``python -m tests.helpers.scripted_traces``) and run records
as the memory stores them."""

from __future__ import annotations

from selfix_action.learn.runs import Attempt, HypothesisOutcome, RunRecord
from selfix_action.repair.fingerprint import FailureSignature, signature
from tests.helpers.projects import REPO_ROOT

TRACES = REPO_ROOT / "tests" / "learn" / "fixtures" / "traces"
SIG = signature("AssertionError", "assert 1 == 1.5", "averages.py:average")


def run_record(
    run_id: str,
    fixed_by: str,
    tried: list[str],
    sig: FailureSignature = SIG,
    file: str = "f",
    symbol: str = "s",
    boosted: tuple[str, ...] = (),
) -> RunRecord:
    """A run's record as the memory stores it: one hypothesis, the templates ``tried`` in order, healed by
    ``fixed_by`` (none: not healed)."""
    attempts = [Attempt(candidate=f"C{i}", template=t, ok=t == fixed_by, stage="x") for i, t in enumerate(tried)]
    h = HypothesisOutcome(
        id="H1",
        rank=1,
        confidence=1,
        title="t",
        file=file,
        symbol=symbol,
        reached=True,
        exposed=True,
        fixed=bool(fixed_by),
        attempts=attempts,
    )
    return RunRecord(
        run_id=run_id,
        healed=bool(fixed_by),
        patch_template=fixed_by,
        signatures=[sig],
        fingerprint=sig.fingerprint,
        hypotheses=[h],
        candidates=len(tried),
        boosted={"H1": list(boosted)} if boosted else {},
    )
