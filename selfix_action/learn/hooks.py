"""Where a heal meets the learning layer: the trace header and outcome, and the memory before/after a run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from selfix_action import __version__
from selfix_action.learn.memory import Memory
from selfix_action.learn.runs import summarize
from selfix_action.learn.trace_schema import TraceError, TraceHeader, read_trace
from selfix_action.repair.fingerprint import FailureSignature, failure_signature
from selfix_action.repair.report import HealReport, StopReason
from selfix_action.repair.values import Evidence, Hypothesis

Trace = Callable[..., None]


def trace_header(repo: str, engine: str) -> dict[str, Any]:
    return TraceHeader(repo=repo, engine=engine, selfix_version=__version__).model_dump()


def outcome_fields(report: HealReport) -> dict[str, Any]:
    """The ``outcome`` event's fields: the final outcome with tokens and cost."""
    signatures = [failure_signature(f) for f in report.failures[:10]]
    confidence = report.confidence if report.patch is not None else None
    return {
        "stop_reason": report.stop_reason.value,
        "healed": report.stop_reason is StopReason.HEALED,  # an unconfirmed patch is not a heal
        "exit_code": report.exit_code,
        "explanation": report.explanation,
        "candidates_tried": report.candidates_tried,
        "test_runs": report.test_runs,
        "confidence": confidence.level if confidence is not None else "",
        "confidence_reasons": [{"level": r.level, "text": r.text} for r in confidence.reasons] if confidence else [],
        "verification": report.verification,
        "review_verdict": report.review.verdict if report.review is not None else "",
        "review_reason": report.review.reason if report.review is not None else "",
        "review_missed": report.review.missed if report.review is not None else "",
        "patch_candidate": report.patch.candidate_id if report.patch else "",
        "patch_template": report.patch.template if report.patch else "",
        "patch_hypothesis": report.patch.hypothesis_id if report.patch else "",
        "patch_description": report.patch.description if report.patch else "",
        "patch_diff": report.patch.diff if report.patch else "",
        "tokens": report.usage.tokens,
        "cost_usd": report.usage.cost_usd,
        "calls": report.usage.calls,
        "seconds": float(report.timings.get("total", 0.0)),
        "fingerprint": signatures[0].fingerprint if signatures else "",
        "signatures": [s.model_dump() for s in signatures],
        "behaviour": report.behaviour.model_dump(mode="json") if report.behaviour and report.patch else None,
    }


def evidence_signatures(evidence: Evidence) -> list[FailureSignature]:
    return [failure_signature(f) for f in evidence.failures[:10]]


def open_memory(path: Path | None, warn: Callable[[str], None]) -> Memory | None:
    if path is None:
        return None
    memory = Memory(path, warn=warn)
    return memory if memory.db is not None else None


def memory_hooks(
    memory: Callable[[], Memory | None], trace: Trace
) -> tuple[Callable[[Evidence, Hypothesis], dict[str, float]], Callable[[Evidence], str]]:
    """The engines' memory hooks, given to them at construction: template boosts for the offline engine (per
    hypothesis: only repairs at the same place or of the same failure count), past cases for the Detective.
    Each use is traced. ``memory`` is looked up at each use: the engine is built (and a bad key refused) before
    the memory file is opened, and a memory that failed to open gives nothing."""

    def boosts(evidence: Evidence, hypothesis: Hypothesis) -> dict[str, float]:
        current = memory()
        if current is None:
            return {}
        scores = current.boosts_for(evidence_signatures(evidence), hypothesis.file, hypothesis.symbol)
        ranked = ", ".join(f"{t} {s:.2f}" for t, s in sorted(scores.items(), key=lambda kv: -kv[1]))
        trace(
            "memory",
            f"{hypothesis.id}: templates that fixed failures here: {ranked or 'none'}",
            boosted=scores,
            hypothesis=hypothesis.id,
        )
        return scores

    def similar(evidence: Evidence) -> str:
        current = memory()
        if current is None:
            return ""
        text = current.prompt_section(evidence_signatures(evidence))
        count = sum(line.startswith("- ") for line in text.splitlines())
        trace("memory", f"{count} similar past case(s) for the Detective", similar_fixes=text)
        return text

    return boosts, similar


def learn_from_run(memory: Memory, trace_path: Path, report: HealReport) -> bool:
    """Record the run (read back from its trace) in the memory; never raises."""
    try:
        run = summarize(read_trace(trace_path))
    except TraceError as exc:
        memory.warnings.append(f"memory: could not read the trace: {exc}")
        return False
    return memory.record(run, diff=report.patch.diff if report.patch else "")
