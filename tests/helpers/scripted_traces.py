"""A scripted-model run of the seed walk-through (tests/llm/test_walkthrough.py) on a copy of examples/age_check,
written to a trace.jsonl in the schema exactly as ``selfix fix`` writes it (header, events, outcome).

``python -m tests.helpers.scripted_traces OUT.trace.jsonl`` regenerates the fixture trace.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from selfix_action.heal.outputs import TraceWriter
from selfix_action.learn.hooks import outcome_fields, trace_header
from selfix_action.repair.loop import HealingLoop, HealResult
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.age_check import AGE_DETECTIVE, PATCH_RIGHT, PATCH_TOO_WIDE, QA_RIGHT, QA_WRONG, engine_for
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use, serve
from tests.helpers.projects import EXAMPLES


def scripted_age_check_trace(trace_path: Path, work: Path) -> HealResult:
    repo = work / "age_check"
    shutil.copytree(EXAMPLES / "age_check", repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [
                anthropic_tool_use("report_hypotheses", AGE_DETECTIVE, input_tokens=900, output_tokens=400)
            ],
            "write_reproduction_test": [
                anthropic_tool_use("write_reproduction_test", QA_WRONG, input_tokens=300),
                anthropic_tool_use("write_reproduction_test", QA_RIGHT, input_tokens=300),
            ],
            "propose_edits": [
                anthropic_tool_use("propose_edits", PATCH_TOO_WIDE, input_tokens=400),
                anthropic_tool_use("propose_edits", PATCH_RIGHT, input_tokens=500),
            ],
        }
    )
    with serve(provider) as url:
        trace = TraceWriter(trace_path, None, header=trace_header("examples/age_check", "anthropic"))
        trace.open()
        engine = engine_for("anthropic", url, trace)  # type: ignore[arg-type]
        with PytestSandbox(
            repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=60), scratch_parent=work
        ) as sandbox:
            result = HealingLoop(sandbox, engine, trace=trace).run()
        trace("outcome", result.report.stop_reason.value, **outcome_fields(result.report))
        trace.close()
    return result


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        scripted_age_check_trace(Path(sys.argv[1]).resolve(), Path(tmp))
