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

import ast
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol, runtime_checkable

from selfix_action.repair.languages import function_spans
from selfix_action.repair.localize import enclosing_function
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.values import Frozen, QATest, TestResult, TestRun
from selfix_action.tracebacks import ReportedError, ReportedFrame

MAX_ATTEMPTS = 3
MAX_SOURCE_LINES = 80  # of one frame's function, shown to QA
MAX_SHOWN_LINES = 240  # of every frame's function together


class RaiseSite(Frozen):
    """Where the reported error left the project's own code, in this checkout."""

    file: str  # repo-relative
    function: str  # its own name: the deployed version's lines may differ from the checkout's

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
            return RaiseSite(file=item.file, function=item.frame.short_function)
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
    shown: set[tuple[str, str]] = set()
    budget = MAX_SHOWN_LINES
    for item in reversed(project):  # innermost first: the raising code matters most
        assert item.file is not None
        try:
            text = read_file(item.file)
        except (OSError, ValueError):
            continue
        source = text.splitlines()
        span = enclosing_function(function_spans(item.file, text), item.frame.line)
        key = (item.file, span.name if span is not None else str(item.frame.line))
        if key in shown or budget <= 0:
            continue
        shown.add(key)
        if span is not None and span.end - span.start < MAX_SOURCE_LINES:
            first, last = span.start, span.end
        else:
            first = max(1, item.frame.line - MAX_SOURCE_LINES // 2)
            last = min(len(source), first + MAX_SOURCE_LINES - 1)
        last = min(last, first + budget - 1)
        budget -= last - first + 1
        name = f"`{span.name}`" if span is not None else "around the frame's line"
        lines.append(f"\n{item.file}, {name}, lines {first}-{last} of this checkout:")
        lines += [f"{n:5d}  {source[n - 1]}" for n in range(first, min(last, len(source)) + 1)]
        if len(shown) == 1 and span is not None and "." in span.name:
            lines += _class_outline(text, span.name.rsplit(".", 1)[0], item.file)
    return "\n".join(lines)


def _class_outline(text: str, qualified: str, file: str) -> list[str]:
    """How to build the raising method's object: its class's header, its constructor's signature (own or
    inherited from a class in the same file) and the abstract members a subclass must define."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    name = qualified.rsplit(".", 1)[-1]
    node = classes.get(name)
    if node is None:
        return []
    source = text.splitlines()
    out = [f"\nthe class `{name}` in {file} (how a test builds one):", f"{node.lineno:5d}  {source[node.lineno - 1]}"]
    seen, queue = set(), [node]
    while queue:
        current = queue.pop(0)
        if current.name in seen:
            continue
        seen.add(current.name)
        for member in current.body:
            if not isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            decorators = {ast.unparse(d).rsplit(".", 1)[-1] for d in member.decorator_list}
            abstract = bool(decorators & {"abstractmethod", "abstractproperty"})
            if member.name == "__init__" or abstract:
                where = "" if current is node else f" (from {current.name})"
                tag = "abstract: a subclass must define it" if abstract else "constructor"
                out.append(f"{member.lineno:5d}  {source[member.lineno - 1].strip()}  # {tag}{where}")
        queue += [classes[b.id] for b in current.bases if isinstance(b, ast.Name) and b.id in classes]
    return out


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
    run: TestRun, test_path: str, wanted_type: str, site: RaiseSite, editable: Callable[[str], bool]
) -> Judgement:
    """Did the run of ``test_path`` fail with ``wanted_type`` (the exception class's own name, as the collector
    records it) raised at ``site``? Every failing test of the file must fail that way (the file is added to the
    project with the fix, and must pass with it)."""
    results = {n: r for n, r in run.results.items() if n.partition("::")[0] == test_path}
    if not results:
        why = run.error or run.output_tail[-1500:] or "no test collected"
        return Judgement((), f"no test of {test_path} ran: {why}")
    failing = [r for r in results.values() if not r.ok]
    if not failing:
        return Judgement((), f"every test of {test_path} passed on the unpatched code: the error did not happen")
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
