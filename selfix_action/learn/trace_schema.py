"""The ``trace.jsonl`` schema, version 1: what every ``selfix fix`` run records, one JSON object per line.

Line 1 is a :class:`TraceHeader` (``{"record": "header", "schema_version": 1, ...}``). Every further line is
an event ``{"t": seconds since start, "step": ..., "message": ..., <step fields>}``; the step fields are flat
(not nested) so a line reads on its own. Typed steps:

==============  ======================================================================================
``sandbox``     the isolation every test run had (:class:`SandboxEvent`)
``start``       the engine that heals
``reproduce_error``  a heal from a production error (--from-error): one of QA's reproduction tests and what its
                run did (``attempt``, ``reproduced``, ``test_path``, ``source``); role ``reproducer`` in ``model_call``
``reproduce``   baseline run and re-runs of the failing tests
``localize``    evidence: failing tests with exception, message and project frames, their fingerprints,
                the ranked suspicious lines (:class:`LocalizeEvent`)
``hypotheses``  the Detective's ranked hypotheses with confidence (:class:`HypothesesEvent`)
``expose``      the QA test for one hypothesis and its verdict (:class:`ExposeEvent`)
``property``    the hypothesis' property test: on the unpatched code (``used``, its counterexample, or why not) or
                on a candidate that passed everything else (``held``, examples, the counterexample)
                (:class:`PropertyEvent`)
``verify``      one patch attempt (hypothesis, template, prior, line) and its verification (:class:`VerifyEvent`)
``minimize``    a hunk dropped from the winning patch
``confirm``     the whole suite on the patched copy
``stop``        the loop's stop reason, counts and engine usage (:class:`StopEvent`)
``model_call``  one LLM request: role, prompt, response, tokens, cost (:class:`ModelCallEvent`)
``ask``         one round of the Detective's or the Patcher's asks for more context: role, the asks, the size of
                the answers, asks left (the answers themselves are in the next ``model_call``'s prompt)
``review``      the reviewer's verdict on the healed patch (verdict, reason, missed, the confidence after it),
                or why there is none
``broaden``     after a partial or wrong verdict: the broader patch that replaced the healed one, or why the
                healed one stays (``candidate``, ``broadened``: its id or null)
``outcome``     the final outcome as ``selfix fix`` saw it: healed?, the patch and its confidence, tokens and
                cost (:class:`OutcomeEvent`)
==============  ======================================================================================

Unknown steps are kept as plain :class:`TraceEvent` (extra fields allowed), so new steps do not need a new
version; a *changed meaning* of an existing field does. :func:`read_trace` refuses any other
``schema_version`` with a clear message and skips a truncated last line (a run killed mid-write).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from selfix_action.repair.fingerprint import FailureSignature
from selfix_action.repair.report import BehaviourEvidence, Usage
from selfix_action.repair.values import Hypothesis, TestResult

SCHEMA_VERSION = 1


class TraceError(Exception):
    """A trace file that cannot be read."""


class TraceVersionError(TraceError):
    """A trace written with a schema version this selfix does not read."""


class TraceHeader(BaseModel):
    model_config = ConfigDict(extra="allow")

    record: Literal["header"] = "header"
    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    repo: str = ""
    engine: str = ""
    selfix_version: str = ""


class TraceEvent(BaseModel):
    model_config = ConfigDict(extra="allow")

    t: float = 0.0
    step: str
    message: str = ""


class SandboxEvent(TraceEvent):
    isolation: dict[str, Any] = Field(default_factory=dict)


class LocalizeEvent(TraceEvent):
    lines: list[dict[str, Any]] = Field(default_factory=list)
    failures: list[TestResult] = Field(default_factory=list)
    signatures: list[FailureSignature] = Field(default_factory=list)
    fingerprint: str = ""  # of the first failing test


class HypothesesEvent(TraceEvent):
    hypotheses: list[Hypothesis] = Field(default_factory=list)


class ExposeEvent(TraceEvent):
    hypothesis: str
    exposed: bool
    qa_path: str | None = None
    qa_test: str | None = None  # the QA test's source; None when the failing tests themselves expose it


class PropertyEvent(TraceEvent):
    """One run of a hypothesis' property test (``repair.properties``): on the unpatched code ``used`` is set (a
    counterexample found: the test is evidence), on a candidate ``held`` is."""

    hypothesis: str = ""
    used: bool | None = None
    source: str = ""
    counterexample: str = ""
    note: str = ""
    candidate: str = ""
    held: bool | None = None
    examples: int = 0
    detail: str = ""
    seconds: float = 0.0


class VerifyEvent(TraceEvent):
    candidate: str
    ok: bool
    stage: str
    detail: str = ""
    hypothesis: str = ""
    template: str = ""
    description: str = ""
    line: int = 0
    prior: float = 0.0
    test_runs: int = 0


class StopEvent(TraceEvent):
    stop_reason: str
    test_runs: int = 0
    candidates: int = 0
    usage: Usage = Field(default_factory=Usage)  # the report's usage (repair.report.Usage)


class ModelCallEvent(TraceEvent):
    role: str = ""
    model: str = ""
    prompt: Any = None
    response: str = ""
    usage: dict[str, Any] = Field(default_factory=dict)
    cost_usd: float = 0.0


class ConfidenceNote(BaseModel):
    """One reason of the patch's confidence (``repair.report.ConfidenceReason``): the level it allows, why."""

    model_config = ConfigDict(extra="allow")

    level: str
    text: str


class OutcomeEvent(TraceEvent):
    stop_reason: str
    healed: bool
    exit_code: int = 1
    explanation: str = ""
    candidates_tried: int = 0
    test_runs: int = 0
    # The patch's confidence, "high"/"medium"/"low" with its reasons, lowering ones first; "" without a patch
    # (and in traces written before it was recorded).
    confidence: str = ""
    confidence_reasons: list[ConfidenceNote] = Field(default_factory=list)
    verification: str = ""  # what the patch was checked on ("confirmed on the whole suite", ...)
    # The reviewer's verdict on the patch (complete, partial, wrong), its reason and the case it says the patch
    # misses; "" without a review.
    review_verdict: str = ""
    review_reason: str = ""
    review_missed: str = ""
    patch_candidate: str = ""  # the patch's candidate id, e.g. H1-C4
    patch_template: str = ""
    patch_hypothesis: str = ""
    patch_description: str = ""
    patch_diff: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    seconds: float = 0.0
    fingerprint: str = ""
    signatures: list[FailureSignature] = Field(default_factory=list)
    behaviour: BehaviourEvidence | None = None  # the behaviour probe's evidence on the patch


EVENT_TYPES: dict[str, type[TraceEvent]] = {
    "sandbox": SandboxEvent,
    "localize": LocalizeEvent,
    "hypotheses": HypothesesEvent,
    "expose": ExposeEvent,
    "verify": VerifyEvent,
    "property": PropertyEvent,
    "stop": StopEvent,
    "model_call": ModelCallEvent,
    "outcome": OutcomeEvent,
}


def parse_event(obj: dict[str, Any]) -> TraceEvent:
    return EVENT_TYPES.get(str(obj.get("step", "")), TraceEvent).model_validate(obj)


class Trace(BaseModel):
    """One run's trace as read back."""

    path: str = ""
    header: TraceHeader
    events: list[TraceEvent]
    truncated: bool = False  # the last line was cut off and skipped

    def steps(self, step: str) -> list[TraceEvent]:
        return [e for e in self.events if e.step == step]

    def first(self, step: str) -> TraceEvent | None:
        return next((e for e in self.events if e.step == step), None)


def parse_lines(lines: Iterable[str], source: str = "<trace>") -> Trace:
    """Parse trace lines; raises :class:`TraceVersionError` / :class:`TraceError` with the line number."""
    raw = [line for line in lines]
    while raw and not raw[-1].strip():
        raw.pop()
    truncated = False
    objects: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(raw):
                truncated = True  # a run killed mid-write leaves half a line: skip it
                break
            raise TraceError(f"{source}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise TraceError(f"{source}:{number}: expected a JSON object")
        objects.append((number, obj))
    if not objects:
        raise TraceError(f"{source}: empty trace")
    number, first = objects[0]
    if "schema_version" not in first:
        raise TraceVersionError(
            f"{source}: no schema header on line 1 (a trace written before schema version {SCHEMA_VERSION}); "
            f"this selfix reads trace schema version {SCHEMA_VERSION} only"
        )
    version = first.get("schema_version")
    if version != SCHEMA_VERSION:
        raise TraceVersionError(
            f"{source}: trace schema version {version!r} is not supported; this selfix reads version "
            f"{SCHEMA_VERSION} (written by a {'newer' if isinstance(version, int) and version > 1 else 'different'}"
            " selfix: upgrade or re-run)"
        )
    try:
        header = TraceHeader.model_validate(first)
        events = [parse_event(obj) for _, obj in objects[1:]]
    except ValidationError as exc:
        raise TraceError(f"{source}: invalid record: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}") from exc
    return Trace(path=source, header=header, events=events, truncated=truncated)


def read_trace(path: str | Path) -> Trace:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse_lines(text.splitlines(), str(path))


def expand_paths(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Trace files named directly, or every ``trace.jsonl``/``*.trace.jsonl`` below a folder, sorted."""
    for item in paths:
        path = Path(item)
        if path.is_dir():
            found = path.rglob("*.jsonl")
            yield from sorted(p for p in found if p.name == "trace.jsonl" or p.name.endswith(".trace.jsonl"))
        else:
            yield path
