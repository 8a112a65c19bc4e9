"""The healing loop's settings: caps on hypotheses, candidates, test runs and time, and verification knobs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LoopConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_hypotheses: int = 3
    max_candidates: int = 500
    max_test_runs: int = 2000
    time_limit_seconds: float = 900.0
    protected_paths: tuple[str, ...] = ()
    user_hint: str = ""
    # A JUnit report none of whose failing tests is in this checkout stops the heal (REPORT_MISMATCH); True: the
    # tests failing here are healed instead, as if no report had been given.
    heal_seen_failures: bool = False
    # The loopback ports the sandbox opens (``allow_ports``): a failing test refused at one of them finds no
    # service listening there; at another, the port is closed (repair.services).
    allow_ports: tuple[int, ...] = ()
    # The naive verification path (whole suite, no early stop, for every candidate); benchmarks compare it.
    full_suite_per_candidate: bool = False
    # Adaptive wall limit for warm candidate checks: max(floor, factor x the checked tests' time on the unpatched
    # code, from the baseline run). 0 turns it off (the sandbox's own limits apply).
    candidate_limit_factor: float = 10.0
    # Only hot checks take this limit (no interpreter start, imports or collection: 15-100 ms each here), so one
    # second is still 10x and more the cost of a check; runaways (a swapped argument that makes a loop endless)
    # are cut there instead of running to the sandbox's limit.
    candidate_limit_floor_seconds: float = 1.0
    # Pick the most plausible passing candidate, not the first: once one passes, up to ``alternatives`` more of
    # the ranking are verified (0: take the first), within ``alternatives_time_share`` of the time left then.
    # Only for engines whose candidates do not answer feedback (the offline engine): for an LLM engine each
    # alternative would be one more model call.
    alternatives: int = 6
    alternatives_time_share: float = 0.25
    # Per-test coverage on the whole-suite confirmation, to measure how the patch changes what the passing tests
    # execute (repair.plausibility.behaviour_change); off, the confidence says it was not measured.
    behaviour_coverage: bool = True
    # Evidence from outside the failing tests once a patch is confirmed (repair/differential.py): a second
    # solution, and the edited functions replayed on the inputs the tests passed them and variations of those.
    behaviour_probe: bool = True
