from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.learn.runs import summarize
from selfix_action.learn.trace_schema import (
    SCHEMA_VERSION,
    LocalizeEvent,
    TraceError,
    TraceHeader,
    TraceVersionError,
    VerifyEvent,
    read_trace,
)
from tests.helpers.learning import TRACES


def lines(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


HEADER = TraceHeader(repo="r", engine="offline").model_dump()


def test_fixture_traces_parse_into_typed_events() -> None:
    trace = read_trace(TRACES / "offline-average.trace.jsonl")
    assert trace.header.schema_version == SCHEMA_VERSION and not trace.truncated
    localize = trace.first("localize")
    assert isinstance(localize, LocalizeEvent) and localize.fingerprint and localize.failures
    verifies = trace.steps("verify")
    assert verifies and all(isinstance(v, VerifyEvent) and v.template for v in verifies)
    run = summarize(trace)
    assert run.healed and run.patch_template == "binop_replace" and run.hypotheses[0].fixed


def test_unknown_version_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(lines({**HEADER, "schema_version": 99}, {"step": "start"}))
    with pytest.raises(TraceVersionError, match="version 99 is not supported; this selfix reads version 1"):
        read_trace(path)
    path.write_text(lines({"t": 0, "step": "start", "message": ""}))
    with pytest.raises(TraceVersionError, match="no schema header"):
        read_trace(path)


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(lines(HEADER, {"t": 0.1, "step": "start", "message": "go"}) + '{"t": 0.2, "step": "veri')
    trace = read_trace(path)
    assert trace.truncated and [e.step for e in trace.events] == ["start"]


def test_garbage_in_the_middle_is_an_error_with_line_number(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(lines(HEADER) + "not json\n" + lines({"step": "start"}))
    with pytest.raises(TraceError, match=":2: not JSON"):
        read_trace(path)


def test_unknown_steps_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(lines(HEADER, {"t": 1, "step": "new_step", "message": "m", "extra": [1]}))
    event = read_trace(path).events[0]
    assert event.step == "new_step" and event.model_extra == {"extra": [1]}
