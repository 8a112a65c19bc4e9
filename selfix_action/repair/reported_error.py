"""A heal that starts from a production error (``selfix fix --from-error``): a reproduction test comes first.

The reported error (``tracebacks.ReportedError``) names no test. Its frames are matched to this checkout's source
files (``locate_frames``: the longest path suffix, since deployments put the code anywhere); the innermost one
that is the project's editable source is where the error was raised (``RaiseSite``). QA then writes a test in a
new file of the project's test folder (``ReproductionRequest``), and it is run there on the unpatched code. It
reproduces the error only when it fails with the same exception type raised at the same project frame (file and
function), read from the traceback the run itself produced (``TestResult.frames``), never from the text of its
output; every test of the file that fails must fail that way. What did not reproduce is fed back, and QA is asked
again, up to ``MAX_ATTEMPTS``. The loop (``HealingLoop.heal_reported``) then heals with that test as the failing
test and the whole existing suite as the passing tests, and the patch adds the test file: the one case where selfix
adds a test, always in a new file, never editing one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol, runtime_checkable

from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.values import Frozen, QATest, TestResult, TestRun
from selfix_action.tracebacks import ReportedError, ReportedFrame

MAX_ATTEMPTS = 3
MAX_SOURCE_LINES = 60  # of the raising function, shown to QA


class RaiseSite(Frozen):
    """Where the reported error left the project's own code, in this checkout."""

    file: str  # repo-relative
    function: str
    line: int  # the reported line (the checkout's may differ: the deployed version may be older)

    def label(self) -> str:
        return f"{self.file}:{self.function}"


class ReproductionRequest(Frozen):
    """What QA is asked to reproduce, and where its test goes."""

    error: str  # the reported error, rendered (``render_error``): untrusted text
    exc_type: str
    site: RaiseSite
    test_path: str  # the new test file, repo-relative (not under _selfix_qa/: it stays with the fix)
    test_imports: str = ""  # the import lines of a test module beside it: how the project's tests import it


@runtime_checkable
class Reproducer(Protocol):
    """QA, writing a test from a reported error (the LLM engines; the offline engine writes none)."""

    def reproduce_error(self, request: ReproductionRequest, sandbox: Sandbox, feedback: str) -> QATest | None:
        """A pytest module for ``request.test_path`` that fails with the reported error on the current code.
        ``feedback``: what the previous attempt did instead. None: no test to offer."""
        ...


@dataclass(frozen=True)
class LocatedFrame:
    frame: ReportedFrame
    file: str | None  # the checkout's file it is, None when none is


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p and p != "."]


def locate_frames(error: ReportedError, files: Collection[str]) -> tuple[LocatedFrame, ...]:
    """Each reported frame with the checkout's file it ran (the one sharing the longest path suffix, at least the
    file name and its folder, or the name alone for a file at the root), or None (a library's, the interpreter's)."""
    by_name: dict[str, list[str]] = {}
    for file in files:
        by_name.setdefault(PurePosixPath(file).name, []).append(file)
    located = []
    for frame in error.frames:
        parts = _parts(frame.path)
        best, best_len = None, 0
        for file in by_name.get(parts[-1] if parts else "", ()):
            own = _parts(file)
            shared = 0
            while shared < min(len(own), len(parts)) and own[-1 - shared] == parts[-1 - shared]:
                shared += 1
            enough = shared >= 2 or shared == len(own)  # `pkg/mod.py`, or a module at the root
            if enough and shared > best_len:
                best, best_len = file, shared
        if best is None and frame.module:
            dotted = frame.module.replace(".", "/")
            best = next((f for f in files if f.endswith(f"{dotted}.py") or f.endswith(f"{dotted}/__init__.py")), None)
        located.append(LocatedFrame(frame, best))
    return tuple(located)


def raise_site(located: Sequence[LocatedFrame], editable: Callable[[str], bool]) -> RaiseSite | None:
    """The innermost frame in the project's editable source: where the error left the project's code."""
    for item in reversed(located):
        if item.file is not None and editable(item.file):
            return RaiseSite(file=item.file, function=item.frame.short_function, line=item.frame.line)
    return None


def render_error(error: ReportedError, located: Sequence[LocatedFrame], read_file: Callable[[str], str]) -> str:
    """The error as QA and the Detective read it: the project's frames first (with this checkout's file and
    line), then the whole stack with library frames as context, then the raising function's source."""
    lines = [f"{error.headline()}", f"reported by: {error.origin or error.source}"]
    if error.chained:
        lines.append("raised from or while handling: " + "; ".join(error.chained))
    project = [item for item in located if item.file is not None]
    if project:
        lines.append("\nthe project's frames (outermost first), as files of this checkout:")
        for item in project:
            lines.append(f"  {item.file}:{item.frame.line} in {item.frame.function}: {item.frame.code}")
            if item.frame.variables:  # what the report recorded of the frame's locals: the inputs that raised
                lines.append("    locals: " + ", ".join(f"{name}={value}" for name, value in item.frame.variables))
    lines.append("\nthe whole stack as reported (outermost first):")
    for item in located:
        where = "project" if item.file is not None else "library"
        lines.append(f"  [{where}] {item.frame.path}:{item.frame.line} in {item.frame.function}: {item.frame.code}")
    if project:
        innermost = project[-1]
        assert innermost.file is not None
        try:
            text = read_file(innermost.file)
        except (OSError, ValueError):
            text = ""
        if text:
            source = text.splitlines()
            start = max(0, innermost.frame.line - MAX_SOURCE_LINES // 2)
            shown = source[start : start + MAX_SOURCE_LINES]
            lines.append(f"\n{innermost.file}, lines {start + 1}-{start + len(shown)} of this checkout:")
            lines += [f"{start + 1 + i:5d}  {line}" for i, line in enumerate(shown)]
    return "\n".join(lines)


def _innermost_project_frame(result: TestResult, test_path: str, editable: Callable[[str], bool]) -> str:
    for frame in reversed(result.frames):
        if frame.file != test_path and editable(frame.file):
            return f"{frame.file}:{frame.function.rsplit('.', 1)[-1]}"
    return ""


@dataclass(frozen=True)
class Judgement:
    reproduced: tuple[str, ...]  # the node ids that failed with the reported error
    summary: str  # what the test did, for the record and as QA's feedback


def judge_reproduction(
    run: TestRun, test_path: str, exc_type: str, site: RaiseSite, editable: Callable[[str], bool]
) -> Judgement:
    """Did the run of ``test_path`` fail with ``exc_type`` raised at ``site``? Every failing test of the file must
    fail that way (the file is added to the project with the fix, and must pass with it)."""
    results = {n: r for n, r in run.results.items() if n.partition("::")[0] == test_path}
    if not results:
        why = run.error or run.output_tail[-1500:] or "no test collected"
        return Judgement((), f"no test of {test_path} ran: {why}")
    failing = [r for r in results.values() if not r.ok]
    if not failing:
        return Judgement((), f"every test of {test_path} passed on the unpatched code: the error did not happen")
    wanted_type = exc_type.rsplit(".", 1)[-1]
    matched, others = [], []
    for result in failing:
        where = _innermost_project_frame(result, test_path, editable)
        if result.exc_type == wanted_type and where == site.label():
            matched.append(result.nodeid)
        else:
            raised = f"{result.exc_type or result.status.value}: {result.message[:300]}"
            place = f"at {where}" if where else "outside the project's source (in the test or a library)"
            others.append(f"{result.nodeid} failed with {raised} {place}")
    if others:
        return Judgement(
            (),
            f"expected {wanted_type} raised at {site.label()}; instead " + "; ".join(others[:3]),
        )
    return Judgement(tuple(matched), f"{', '.join(matched)} failed with {wanted_type} raised at {site.label()}")
