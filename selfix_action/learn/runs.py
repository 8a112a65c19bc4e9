"""One trace folded into what learning needs: each hypothesis with its exposure, patch attempts and outcome."""

from __future__ import annotations

from pydantic import BaseModel, Field

from selfix_action.learn.trace_schema import (
    ExposeEvent,
    HypothesesEvent,
    LocalizeEvent,
    ModelCallEvent,
    OutcomeEvent,
    StopEvent,
    Trace,
    VerifyEvent,
)
from selfix_action.repair.fingerprint import FailureSignature

MAX_PROMPT_FAILURES = 3
MAX_PROMPT_LINES = 8


class Attempt(BaseModel):
    candidate: str
    template: str = ""
    description: str = ""
    ok: bool
    stage: str
    detail: str = ""
    prior: float = 0.0


class HypothesisOutcome(BaseModel):
    id: str
    rank: int
    confidence: float
    title: str
    file: str
    symbol: str
    lines: list[int] = Field(default_factory=list)
    reasoning: str = ""
    proposed_fix: str = ""
    reached: bool = False  # the loop got to this hypothesis (exposure was attempted)
    exposed: bool = False
    qa_test: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    fixed: bool = False  # one of its patches was verified


class RunRecord(BaseModel):
    run_id: str
    path: str = ""
    repo: str = ""
    engine: str = ""
    stop_reason: str = ""
    healed: bool = False
    fingerprint: str = ""
    signatures: list[FailureSignature] = Field(default_factory=list)
    evidence: str = ""  # a compact text of the failure and localization: the DPO prompt for offline runs
    detective_prompt: str = ""  # the recorded Detective prompt (LLM runs)
    hypotheses: list[HypothesisOutcome] = Field(default_factory=list)
    candidates: int = 0
    test_runs: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    patch_template: str = ""
    truncated: bool = False
    suspects: list[str] = Field(default_factory=list)  # "file:function" of the ranked suspicious lines, in order
    boosted: dict[str, list[str]] = Field(default_factory=dict)  # hypothesis id -> templates the memory boosted


def _render_evidence(event: LocalizeEvent | None) -> str:
    if event is None:
        return ""
    out = ["# Failing tests"]
    for failure in event.failures[:MAX_PROMPT_FAILURES]:
        out.append(f"- {failure.nodeid}: {failure.status.value} {failure.exc_type}".rstrip())
        first = failure.message.strip().splitlines()[:3]
        out += [f"    {line}" for line in first]
        out += [f"    at {f.file}:{f.line} in {f.function}: {f.code.strip()}" for f in failure.frames[-3:]]
    out.append("# Most suspicious lines")
    for item in event.lines[:MAX_PROMPT_LINES]:
        where = f" in {item.get('function')}" if item.get("function") else ""
        out.append(f"- {item.get('file')}:{item.get('line')}{where} score {float(item.get('score', 0.0)):.3f}")
    return "\n".join(out)


def _prompt_text(prompt: object) -> str:
    """A recorded prompt (list of chat messages, or text) as one text."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        parts = []
        for message in prompt:
            if isinstance(message, dict):
                content = message.get("content")
                if isinstance(content, list):
                    content = "\n".join(str(c.get("text", c)) if isinstance(c, dict) else str(c) for c in content)
                parts.append(f"[{message.get('role', '')}]\n{content}")
            else:
                parts.append(str(message))
        return "\n\n".join(parts)
    return "" if prompt is None else str(prompt)


def summarize(trace: Trace) -> RunRecord:
    localize = next((e for e in trace.events if isinstance(e, LocalizeEvent)), None)
    record = RunRecord(
        run_id=trace.header.run_id,
        path=trace.path,
        repo=trace.header.repo,
        engine=trace.header.engine,
        evidence=_render_evidence(localize),
        truncated=trace.truncated,
    )
    if localize is not None:
        record.fingerprint = localize.fingerprint
        record.signatures = list(localize.signatures)
        ranked = [f"{item.get('file')}:{item.get('function') or '<module>'}" for item in localize.lines]
        record.suspects = list(dict.fromkeys(ranked))
    by_id: dict[str, HypothesisOutcome] = {}
    for event in trace.events:
        if isinstance(event, HypothesesEvent):
            for h in event.hypotheses:
                by_id[h.id] = HypothesisOutcome(
                    id=h.id,
                    rank=h.rank,
                    confidence=h.confidence,
                    title=h.title,
                    file=h.file,
                    symbol=h.symbol,
                    lines=list(h.lines),
                    reasoning=h.reasoning,
                    proposed_fix=h.proposed_fix,
                )
        elif isinstance(event, ExposeEvent) and event.hypothesis in by_id:
            target = by_id[event.hypothesis]
            target.reached, target.exposed, target.qa_test = True, event.exposed, event.qa_test
        elif isinstance(event, VerifyEvent):
            hid = event.hypothesis or event.candidate.split("-")[0]
            if hid in by_id:
                by_id[hid].attempts.append(
                    Attempt(
                        candidate=event.candidate,
                        template=event.template,
                        description=event.description or event.message,
                        ok=event.ok,
                        stage=event.stage,
                        detail=event.detail,
                        prior=event.prior,
                    )
                )
                by_id[hid].fixed = by_id[hid].fixed or event.ok
        elif event.step == "memory" and isinstance((event.model_extra or {}).get("hypothesis"), str):
            extra = event.model_extra or {}
            boosted = extra.get("boosted")
            if isinstance(boosted, dict):
                record.boosted[str(extra["hypothesis"])] = sorted(str(t) for t in boosted)
        elif isinstance(event, ModelCallEvent) and event.role == "detective" and not record.detective_prompt:
            record.detective_prompt = _prompt_text(event.prompt)
        elif isinstance(event, StopEvent):
            record.stop_reason = event.stop_reason
            record.candidates = event.candidates
            record.test_runs = event.test_runs
            record.tokens = event.usage.tokens
            record.cost_usd = event.usage.cost_usd
            record.calls = event.usage.calls
        elif isinstance(event, OutcomeEvent):
            record.stop_reason = event.stop_reason
            record.healed = event.healed
            record.candidates = event.candidates_tried
            record.test_runs = event.test_runs
            record.tokens, record.cost_usd, record.calls = event.tokens, event.cost_usd, event.calls
            record.patch_template = event.patch_template
            record.fingerprint = record.fingerprint or event.fingerprint
            record.signatures = record.signatures or list(event.signatures)
            if event.patch_hypothesis:
                for outcome in by_id.values():
                    outcome.fixed = outcome.id == event.patch_hypothesis
    if record.stop_reason == "healed":
        record.healed = True
    # A verified candidate whose whole-suite confirmation failed does not count as a fix.
    if not record.healed:
        for outcome in by_id.values():
            outcome.fixed = False
    record.hypotheses = sorted(by_id.values(), key=lambda h: h.rank)
    return record
