"""The tools' results: typed values whose JSON Schema each tool declares as its output schema.

Every result has ``error``: None when the tool did its work, else what went wrong (``kind``: ``bad_input`` for
arguments the caller can fix, ``sandbox`` when the tests could not run, ``cancelled``, ``internal``). A tool
never answers with a protocol error for those: the caller reads them like any other result."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from selfix_action.junit import JUnitReport
from selfix_action.repair.report import Confidence, HealReport, PatchRecord
from selfix_action.repair.values import TestResult, Verification

ProblemKind = Literal["bad_input", "sandbox", "cancelled", "internal"]


class Problem(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: ProblemKind
    message: str


class ToolResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    error: Problem | None = Field(default=None, description="None when the tool did its work; else why not")


class Failure(BaseModel):
    model_config = ConfigDict(frozen=True)

    nodeid: str
    status: str
    exc_type: str = ""
    message: str = ""
    where: str = Field(default="", description="the innermost frame in the project's code, file:line")

    @classmethod
    def of(cls, result: TestResult) -> Failure:
        frame = result.frames[-1] if result.frames else None
        where = f"{frame.file}:{frame.line}" if frame is not None else ""
        return cls(
            nodeid=result.nodeid,
            status=result.status.value,
            exc_type=result.exc_type,
            message=result.message.strip()[:2000],
            where=where,
        )


class ReproduceResult(ToolResult):
    failing: list[Failure] = Field(default_factory=list, description="tests that fail every time in the sandbox")
    flaky: list[str] = Field(default_factory=list, description="failed once, passed when re-run")
    hung: list[str] = Field(default_factory=list, description="killed by the test-run time limit")
    sandbox_failures: list[Failure] = Field(default_factory=list)
    passing: int = 0
    notes: list[str] = Field(default_factory=list)
    stopped: str = Field(default="", description="why reproduction could not finish ('' when it did)")
    isolation: str = ""
    test_runs: int = 0


class Suspect(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str
    name: str
    start: int
    end: int
    score: float


class SuspectLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    score: float
    function: str | None = None


class LocalizeResult(ReproduceResult):
    functions: list[Suspect] = Field(default_factory=list, description="most suspicious first")
    lines: list[SuspectLine] = Field(default_factory=list, description="most suspicious first (20 at most)")
    coverage_used: bool = False
    localization_note: str = ""


class RunTestsResult(ToolResult):
    results: list[Failure] = Field(default_factory=list, description="every test that ran, with its status")
    passed: int = 0
    failed: int = 0
    timed_out: bool = False
    run_error: str = Field(default="", description="why the run gave no result, when it did not")
    output_tail: str = ""
    isolation: str = ""


class PatchOutcome(ToolResult):
    """What a heal or a patch verification ended with (the heal's report, in short)."""

    accepted: bool = Field(default=False, description="verified and confirmed on the whole suite")
    stop_reason: str = ""
    explanation: str = ""
    engine: str = ""
    f2p_tests: list[str] = Field(default_factory=list)
    p2p_tests: int = Field(default=0, description="passing tests the patch had to keep passing")
    flaky_tests: list[str] = Field(default_factory=list)
    exposure: str = Field(default="", description="how the failure was reproduced for the patch (the QA test)")
    rejections: list[Verification] = Field(default_factory=list, description="why a patch was rejected")
    patch: PatchRecord | None = Field(default=None, description="the verified patch, minimized")
    confidence: Confidence | None = None
    verification: str = ""
    notes: list[str] = Field(default_factory=list)
    applied: bool = Field(default=False, description="written to the working tree (apply asked and accepted)")
    test_runs: int = 0
    isolation: str = ""

    @classmethod
    def of(cls, report: HealReport, *, accepted: bool, applied: bool) -> PatchOutcome:
        records = report.hypotheses
        return cls(
            accepted=accepted,
            stop_reason=report.stop_reason.value,
            explanation=report.explanation,
            engine=report.engine,
            f2p_tests=list(report.f2p_tests),
            p2p_tests=len(report.p2p_tests),
            flaky_tests=list(report.flaky_tests),
            exposure="; ".join(r.exposure for r in records if r.exposure),
            rejections=[v for r in records for v in r.rejections],
            patch=report.patch,
            confidence=report.confidence,
            verification=report.verification,
            notes=list(report.notes),
            applied=applied,
            test_runs=report.test_runs,
            isolation=str(report.isolation.get("level", "")),
        )


class JUnitResult(ToolResult):
    report: JUnitReport | None = None
