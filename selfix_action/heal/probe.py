"""The heal's first steps alone, for front ends that ask for them one at a time (``selfix mcp``'s tools).

``probe`` reproduces (the whole suite with per-test coverage, failing tests re-run: flaky ones told apart) and,
when asked, localizes; ``run_tests`` runs chosen tests once. Each opens the same sandbox ``heal_in_sandbox``
opens (``open_sandbox``: the scratch copy, the request's isolation and limits) and calls the loop's own steps
(``repair.evidence.reproduce``, ``gather_evidence``, ``Verifier.run``): nothing about them is written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from selfix_action.heal.pipeline import for_node, open_sandbox
from selfix_action.heal.project import node_project
from selfix_action.heal.request import HealRequest
from selfix_action.repair.evidence import Reproduction, gather_evidence, reproduce
from selfix_action.repair.values import Evidence, TestRun
from selfix_action.repair.verify import Verifier
from selfix_action.sandbox.isolation import detect_isolation
from selfix_action.toolchains.node import NodeProject


@dataclass(frozen=True)
class Probe:
    """What reproducing (and localizing) found, and the isolation the runs had."""

    reproduction: Reproduction
    evidence: Evidence | None  # None unless localization was asked for and a test fails every time
    isolation: dict[str, Any]
    test_runs: int


def probe(request: HealRequest, *, localize: bool = False, nodeids: Sequence[str] = ()) -> Probe:
    """Reproduce ``request``'s failures in the sandbox (``nodeids``: only those are the failing tests asked about,
    as a CI report would name them); with ``localize``, rank the suspicious lines and functions too. Raises
    ``SandboxError`` when the suite cannot run at all."""
    isolation = detect_isolation(request.isolation)
    request, node = _toolchain(request)
    with open_sandbox(request, isolation, node) as sandbox:
        verifier = Verifier(sandbox, request.loop)
        repro = reproduce(verifier, tuple(nodeids), (), heal_seen_failures=request.loop.heal_seen_failures)
        evidence = None
        if localize and repro.f2p and repro.stop is None:
            evidence = gather_evidence(sandbox, repro, user_hint=request.loop.user_hint)
        return Probe(repro, evidence, isolation.report(), verifier.budget.test_runs)


def _toolchain(request: HealRequest) -> tuple[HealRequest, NodeProject | None]:
    """A JavaScript project's request runs on its own runner (``pipeline.for_node``)."""
    node = node_project(request.repo, request.toolchain)
    return (request, None) if node is None else (for_node(request, node), node)


def run_tests(request: HealRequest, nodeids: Sequence[str] | None) -> tuple[TestRun, dict[str, Any]]:
    """One run of ``nodeids`` (None: the whole suite) in the sandbox, and the isolation it had."""
    isolation = detect_isolation(request.isolation)
    request, node = _toolchain(request)
    with open_sandbox(request, isolation, node) as sandbox:
        run = Verifier(sandbox, request.loop).run(None if nodeids is None else list(nodeids))
        return run, isolation.report()
