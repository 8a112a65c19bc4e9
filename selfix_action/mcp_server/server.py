"""The MCP server: selfix's tools over one repository, fixed when the server starts.

Each tool call is blocking work (test runs in the sandbox): it runs in a worker thread of its own
(``anyio.to_thread``), inside a ``sandbox.cancel.Cancellation``; when the client cancels the call, every
sandbox process of that call is killed and the handler waits until the work has unwound (its scratch copy
removed, no process of it left) before it returns. Two calls at once each get their own scratch copy.

The working tree is never written unless a tool is called with ``apply`` and its patch is accepted; every report
file goes to a temporary folder outside the repository, removed after the call.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from selfix_action import __version__
from selfix_action.errors import SandboxError, SelfixError
from selfix_action.heal import HealOutcome, HealRequest, heal
from selfix_action.heal.given import verify_patch
from selfix_action.heal.outputs import apply_to_tree
from selfix_action.heal.probe import Probe, probe, run_tests
from selfix_action.junit import parse_reports
from selfix_action.mcp_server.results import (
    Failure,
    JUnitResult,
    LocalizeResult,
    PatchOutcome,
    Problem,
    ReproduceResult,
    RunTestsResult,
    Suspect,
    SuspectLine,
    ToolResult,
)
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.cancel import CANCELLED, Cancellation

log = logging.getLogger(__name__)

R = TypeVar("R", bound=ToolResult)
CANCEL_WAIT_SECONDS = 60.0  # at most, for a cancelled call's work to unwind after its processes were killed

INSTRUCTIONS = (
    "selfix runs this repository's pytest suite in a sandbox (no network, no secrets, a scratch copy) and judges "
    "patches the way its CI healer does: fail-to-pass and pass-to-pass tests, minimization, a confidence with "
    "reasons. Call reproduce first, then verify_patch with your unified diff; nothing is written to the working "
    "tree unless apply is true and the patch is accepted. Test files, conftest.py and CI files are never edited."
)

Engine = Literal["offline", "anthropic", "openai", "auto"]


class Tools:
    """The tools' bodies, over ``base``: the request every call starts from (repository, test command,
    isolation, limits, engine keys)."""

    def __init__(self, base: HealRequest) -> None:
        self.base = base
        self.repo = base.repo.resolve()

    # -- arguments ---------------------------------------------------------------------------------------
    def inside(self, path: str, what: str) -> Path:
        """``path`` (relative to the repository, or absolute) resolved, refused outside the repository."""
        candidate = Path(path)
        target = (candidate if candidate.is_absolute() else self.repo / candidate).resolve()
        if not target.is_relative_to(self.repo):
            raise SelfixError(f"{what} {path!r} is outside the repository {self.repo}")
        return target

    def nodeids(self, ids: Sequence[str]) -> list[str]:
        """Node ids, each one's file inside the repository, written relative to it."""
        out = []
        for nodeid in ids:
            file, sep, rest = nodeid.partition("::")
            if not file.strip():
                raise SelfixError(f"not a pytest node id: {nodeid!r}")
            relative = self.inside(file, "test").relative_to(self.repo).as_posix()
            out.append(relative + sep + rest)
        return out

    def request(self, out_dir: Path, **loop: object) -> HealRequest:
        return dataclasses.replace(
            self.base, out_dir=out_dir, loop=self.base.loop.model_copy(update=loop), junit=(), memory_path=None
        )

    # -- tools ---------------------------------------------------------------------------------------------
    def reproduce(self, tests: Sequence[str]) -> ReproduceResult:
        found = probe(self.request(self.repo / ".selfix"), nodeids=self.nodeids(tests))
        return ReproduceResult.model_validate(_reproduction(found))

    def localize(self, tests: Sequence[str]) -> LocalizeResult:
        found = probe(self.request(self.repo / ".selfix"), localize=True, nodeids=self.nodeids(tests))
        fields = _reproduction(found)
        evidence = found.evidence
        if evidence is not None:
            fields["functions"] = [Suspect(**f.model_dump()) for f in evidence.suspicious_functions[:10]]
            fields["lines"] = [SuspectLine(**line.model_dump()) for line in evidence.suspicious_lines[:20]]
            fields["coverage_used"] = evidence.coverage_used
            fields["localization_note"] = evidence.localization_note
        return LocalizeResult.model_validate(fields)

    def run_tests(self, tests: Sequence[str]) -> RunTestsResult:
        run, isolation = run_tests(self.request(self.repo / ".selfix"), self.nodeids(tests) or None)
        results = [Failure.of(r) for r in run.results.values()]
        return RunTestsResult(
            results=results,
            passed=sum(r.status is TestStatus.PASSED for r in run.results.values()),
            failed=sum(r.status in (TestStatus.FAILED, TestStatus.ERROR) for r in run.results.values()),
            timed_out=run.timed_out,
            run_error=run.error,
            output_tail=run.output_tail[-4000:] if not run.results or run.error else "",
            isolation=str(isolation.get("level", "")),
        )

    def verify_patch(self, diff: str, qa_test: str | None, apply: bool, time_limit: float) -> PatchOutcome:
        with tempfile.TemporaryDirectory(prefix="selfix-mcp-") as out:
            request = self.request(Path(out) / "report", time_limit_seconds=time_limit)
            outcome = verify_patch(request, diff, qa_source=qa_test)
            return self._outcome(outcome, apply)

    def heal(self, engine: Engine, apply: bool, time_limit: float, max_candidates: int, hint: str) -> PatchOutcome:
        with tempfile.TemporaryDirectory(prefix="selfix-mcp-") as out:
            request = self.request(
                Path(out) / "report", time_limit_seconds=time_limit, max_candidates=max_candidates, user_hint=hint
            )
            request = dataclasses.replace(request, engine=dataclasses.replace(request.engine, kind=engine))
            return self._outcome(heal(request), apply)

    def _outcome(self, outcome: HealOutcome, apply: bool) -> PatchOutcome:
        applied = False
        if apply and outcome.healed and outcome.result.files is not None:
            apply_to_tree(self.repo, outcome.result.files, outcome.result.originals)
            applied = True
        result = PatchOutcome.of(outcome.report, accepted=outcome.healed, applied=applied)
        return result.model_copy(update={"notes": [*result.notes, *outcome.warnings]})

    def junit(self, paths: Sequence[str]) -> JUnitResult:
        if not paths:
            raise SelfixError("no JUnit report given")
        files = [self.inside(p, "JUnit report") for p in paths]
        return JUnitResult(report=parse_reports([str(f) for f in files]))


def _reproduction(found: Probe) -> dict[str, object]:
    """A ``ReproduceResult``'s fields from what reproducing found."""
    repro = found.reproduction
    results = repro.baseline.results
    return {
        "failing": [Failure.of(results[n]) for n in repro.f2p if n in results],
        "flaky": list(repro.flaky),
        "hung": list(repro.hung),
        "sandbox_failures": [Failure.of(r) for r in repro.sandbox_failures],
        "passing": len(repro.p2p),
        "notes": list(repro.notes),
        "stopped": repro.stop.detail or repro.stop.why if repro.stop is not None else "",
        "isolation": str(found.isolation.get("level", "")),
        "test_runs": found.test_runs,
    }


async def _blocking(work: Callable[[], R], failed: Callable[[Problem], R]) -> R:
    """``work()`` in a worker thread of its own; a ``SelfixError`` becomes a result (``failed``). Cancelled by
    the client: its sandbox processes are killed and the work unwinds before the cancellation goes on."""
    cancellation = Cancellation()

    def run() -> R:
        with cancellation.active():
            try:
                return work()
            except SandboxError as exc:
                cancelled = str(exc) == CANCELLED
                return failed(Problem(kind="cancelled" if cancelled else "sandbox", message=str(exc)))
            except SelfixError as exc:
                return failed(Problem(kind="bad_input", message=str(exc)))
            except Exception as exc:  # a bug of selfix's: the server answers on, the caller is told
                log.exception("tool failed")
                return failed(Problem(kind="internal", message=f"{type(exc).__name__}: {exc}"))

    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        cancellation.cancel()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(cancellation.finished.wait, CANCEL_WAIT_SECONDS)
        raise


def build_server(base: HealRequest) -> MCPServer:
    """The server, its tools bound to ``base`` (the repository and how its tests run)."""
    tools = Tools(base)
    server = MCPServer("selfix", version=__version__, instructions=INSTRUCTIONS)
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @server.tool(annotations=reads)
    async def reproduce(
        tests: Annotated[
            list[str], Field(description="node ids to ask about (as a CI report names them); [] = every failing one")
        ] = [],  # noqa: B006 - the SDK builds the schema's default from it; never mutated
    ) -> ReproduceResult:
        """Run the whole suite in the sandbox (per-test coverage), re-run the failing tests: which fail every
        time, which are flaky, which hang, with each failure's exception and project frame."""
        return await _blocking(lambda: tools.reproduce(tests), lambda p: ReproduceResult(error=p))

    @server.tool(annotations=reads)
    async def localize(
        tests: Annotated[list[str], Field(description="node ids of the failing tests to localize; [] = all")] = [],  # noqa: B006
    ) -> LocalizeResult:
        """Reproduce, then rank where the bug probably is: suspicious functions and lines (Ochiai spectrum over
        per-test coverage, plus the failing tracebacks' project frames)."""
        return await _blocking(lambda: tools.localize(tests), lambda p: LocalizeResult(error=p))

    @server.tool(annotations=reads)
    async def run_tests(
        tests: Annotated[list[str], Field(description="pytest node ids or test files; [] = the whole suite")] = [],  # noqa: B006
    ) -> RunTestsResult:
        """Run these tests once in the sandbox (the unpatched working tree's code) and return each one's status."""
        return await _blocking(lambda: tools.run_tests(tests), lambda p: RunTestsResult(error=p))

    @server.tool(annotations=writes)
    async def verify_patch(
        diff: Annotated[str, Field(description="a unified diff (git diff) against the working tree")],
        qa_test: Annotated[
            str | None, Field(description="a pytest module that must fail without the patch and pass with it")
        ] = None,
        apply: Annotated[bool, Field(description="write the patch to the working tree if accepted")] = False,
        time_limit: Annotated[float, Field(gt=0, description="wall seconds for the whole verification")] = 900.0,
    ) -> PatchOutcome:
        """Verify a patch as selfix verifies its own: reproduce the failure, refuse edits to tests/CI files and
        patches that cannot make sense, run the failing tests (F2P) and the passing tests the edit reaches (P2P),
        minimize it, confirm it on the whole suite, and judge its confidence with reasons. accepted=true only
        when confirmed; rejections say why not."""
        return await _blocking(
            lambda: tools.verify_patch(diff, qa_test, apply, time_limit), lambda p: PatchOutcome(error=p)
        )

    @server.tool(annotations=writes)
    async def heal(
        engine: Annotated[Engine, Field(description="offline (no key), anthropic, openai or auto")] = "offline",
        apply: Annotated[bool, Field(description="write the patch to the working tree if healed")] = False,
        time_limit: Annotated[float, Field(gt=0, description="wall seconds for the whole heal")] = 900.0,
        max_candidates: Annotated[int, Field(ge=1, description="candidate patches to try at most")] = 500,
        hint: Annotated[str, Field(description="free text for the Detective")] = "",
    ) -> PatchOutcome:
        """The whole heal pipeline on the failing tests: reproduce, localize, hypothesize, patch, verify,
        minimize, confirm; the LLM engines use the keys and budgets the server was started with."""
        return await _blocking(
            lambda: tools.heal(engine, apply, time_limit, max_candidates, hint), lambda p: PatchOutcome(error=p)
        )

    @server.tool(annotations=reads)
    async def junit(
        paths: Annotated[list[str], Field(description="JUnit/xUnit XML files inside the repository")],
    ) -> JUnitResult:
        """Parse JUnit/xUnit XML reports (hostile XML refused): every case with its outcome, node id and message."""
        return await _blocking(lambda: tools.junit(paths), lambda p: JUnitResult(error=p))

    return server


def serve(base: HealRequest) -> None:
    """Serve over stdio until the client closes the connection."""
    build_server(base).run("stdio")


__all__ = ["Tools", "build_server", "serve"]
