"""Context recall, measured with no model: does what the LLM engine shows the model hold the code the developers'
fix changed?

For each task (the real bugs of ``bench/realbugs/tasks``, the one-line mutants of ``bench/tasks``) this builds the
requests the real ``LLMEngine`` sends, over a scripted in-process model, from the evidence the product's own
reproduce + localize gathered on the buggy repository (real pytest, per-test coverage, the task's CI JUnit report),
and counts the developers' fix hunks whose buggy lines the requests show.

Definitions (also printed above the table):

- **hunks**: the ``git diff -U0`` hunks of the developers' fix, buggy tree -> fixed tree, on the non-test source
  files (``engine.paths.is_source_path``; ``BenchTask.reference_fix``: the developers' fix, a mutant's inverse splice).
  A hunk's *buggy lines* are the lines it removes or replaces in the buggy file; a pure insertion's is the line
  just before the insertion point (line 1 when at the top).
- **shown**: every buggy line of the hunk appears, with its line number, in the request text: under a
  ``### path (N lines)`` header, in the fenced block of numbered lines ``"{n:>5} | {code}"`` that follows it
  (``llm.prompts.render_slices``). The rendered text is parsed, not the engine's internal line sets, so whatever
  changes in how the context is built is measured as the model sees it.
- **Detective**: the Detective's request (system prompt + shared context + role message).
- **Patcher (a)**: the Patcher's first request for a hypothesis naming the first fix hunk's location only (file,
  enclosing function or method, the hunk's lines); **Patcher (b)**: the same with every other hunk's location in
  ``Hypothesis.also``.
- **reachable**: the engine's ask tools show the hunk: a file ask for its lines, answered by
  ``llm.asks.RepositoryView`` as the engine answers it, shows every buggy line (``reachable_by_asking``).
- **size**: characters of each role's request, and chars / 4 as a rough token count.

    selfix bench recall bench/realbugs/tasks bench/tasks --mirror-dir DIR [--evidence-dir results/evidence]
    python -m selfix_bench.recall TASKS ... [--json OUT] [--compare OTHER.json]

The evidence (an ``Evidence`` as JSON, ``ID.json``, and what its capture did, ``ID.meta.json``) is cached in the
evidence folder: capturing takes 20-120 s per real bug, measuring again after a prompt change seconds.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfix_action.errors import InputError
from selfix_action.llm.asks import RepositoryView
from selfix_action.llm.budget import Budget
from selfix_action.llm.engine import LLMEngine
from selfix_action.llm.schemas import DETECTIVE_TOOL, PATCHER_TOOL, QA_TOOL, REVIEW_TOOL
from selfix_action.providers.base import ModelRequest, ModelResponse, PreflightResult, TokenUsage
from selfix_action.repair.paths import is_source_path
from selfix_action.repair.protocols import EngineStopped, Sandbox
from selfix_action.repair.report import Confidence, StopReason, Usage
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import (
    CandidatePatch,
    Evidence,
    Hypothesis,
    Location,
    PlanChange,
    QATest,
    Verification,
)
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench import realbugs
from selfix_bench.base import BenchTask
from selfix_bench.kinds import load_bench_task, load_bench_tasks
from selfix_bench.runner import run_module
from selfix_bench.stats import median, paired_comparison, wilson_interval
from selfix_bench.worker import HealSettings
from selfix_bench.worker import heal as heal_task

ROLES = ("detective", "qa", "patcher_a", "patcher_b")
FIGURES = ("detective", "patcher_a", "patcher_b", "reachable")
REACHABLE_NOTE = "(a file ask for its lines)"
CAPTURE_TIME_LIMIT = 900.0  # seconds the heal may take to reproduce and localize (the loop stops it there)
CAPTURE_GRACE = 300.0  # on top, for materializing the tree and building the task's Python
GIT_DIFF_TIMEOUT = 60
DEFINITIONS = (
    "hunks: git diff -U0 hunks of the developers' fix on non-test source files; a hunk's buggy lines: the lines "
    "it removes or replaces (a pure insertion: the line before it, 1 at the top).\n"
    "shown: every buggy line appears with its line number under its file's '### path (N lines)' header in the "
    "rendered request (system + context + role message).\n"
    "det: the Detective's request; pat-a: the Patcher's for a hypothesis at the first hunk; pat-b: the same naming "
    f"every hunk (first + also); reach: reachable by asking {REACHABLE_NOTE}. ~tok = chars / 4."
)


# -- hunks -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hunk:
    """One ``git diff -U0`` hunk of a fix: the buggy lines it touches (1-based, in the buggy file)."""

    file: str
    lines: tuple[int, ...]
    removed: int  # lines it removes or replaces (0: a pure insertion)
    added: int

    @property
    def key(self) -> str:
        return f"{self.file}:{self.lines[0]}"


def _hunk_header(line: str) -> tuple[int, int, int, int] | None:
    """``@@ -a,b +c,d @@`` as (a, b, c, d), a missing count being 1."""
    if not line.startswith("@@ -"):
        return None
    old, new = line[3:].split(" @@", 1)[0].split(" ")
    a, _, b = old.lstrip("-").partition(",")
    c, _, d = new.lstrip("+").partition(",")
    return int(a), int(b or 1), int(c), int(d or 1)


def diff_hunks(path: str, before: str, after: str) -> list[Hunk]:
    """The ``git diff -U0`` hunks from ``before`` to ``after`` (git's defaults; the user's git config ignored)."""
    if before == after:
        return []
    with tempfile.TemporaryDirectory(prefix="selfix-recall-diff-") as tmp:
        (Path(tmp) / "a").write_bytes(before.encode("utf-8"))
        (Path(tmp) / "b").write_bytes(after.encode("utf-8"))
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
        try:
            proc = subprocess.run(
                ["git", "diff", "--no-index", "--no-color", "--no-ext-diff", "-U0", "a", "b"],
                cwd=tmp,
                capture_output=True,
                timeout=GIT_DIFF_TIMEOUT,
                env=env,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"git diff of {path} could not run: {exc}") from exc
    if proc.returncode not in (0, 1):
        raise InputError(f"git diff of {path} failed: {proc.stderr.decode(errors='replace').strip()[-300:]}")
    hunks = []
    for line in proc.stdout.decode("utf-8", errors="replace").splitlines():
        header = _hunk_header(line)
        if header is None:
            continue
        start, removed, _, added = header
        lines = tuple(range(start, start + removed)) if removed else (max(1, start),)
        hunks.append(Hunk(path, lines, removed, added))
    return hunks


def fix_texts(task: BenchTask) -> tuple[dict[str, str], dict[str, str]]:
    """The developers' fix of the task's non-test source files: (fixed texts, buggy texts) by path."""
    fixed, buggy = task.reference_fix()
    keep = [p for p in fixed if is_source_path(p)]
    return {p: fixed[p] for p in keep}, {p: buggy[p] for p in keep}


def fix_hunks(fixed: Mapping[str, str], buggy: Mapping[str, str]) -> list[Hunk]:
    return [h for path in fixed for h in diff_hunks(path, buggy.get(path, ""), fixed[path])]


def enclosing_symbol(source: str, line: int) -> str:
    """The innermost function, method (``Class.method``) or class around ``line``; ``<module>`` outside any."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "<module>"
    best = "<module>"

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                if first <= line <= (child.end_lineno or child.lineno):
                    best = f"{prefix}{child.name}"
                    visit(child, f"{best}.")

    visit(tree, "")
    return best


def hunk_location(hunk: Hunk, buggy_text: str) -> Location:
    return Location(
        file=hunk.file,
        symbol=enclosing_symbol(buggy_text, hunk.lines[0]),
        lines=tuple(range(hunk.lines[0], hunk.lines[-1] + 1)),
    )


def right_hypothesis(hunks: Sequence[Hunk], buggy: Mapping[str, str], *, every: bool) -> Hypothesis:
    """A hypothesis at the fix's location: the first hunk's (variant a), and every other's in ``also`` (b)."""
    locations = [hunk_location(h, buggy.get(h.file, "")) for h in hunks]
    first = locations[0]
    return Hypothesis(
        id="H1",
        rank=1,
        title="the code the developers' fix changed is wrong",
        confidence=0.9,
        file=first.file,
        symbol=first.symbol,
        lines=first.lines,
        reasoning="recall benchmark: the location of the developers' fix",
        proposed_fix="change the code at this location as the failing tests require",
        also=tuple(locations[1:]) if every else (),
    )


# -- what a request shows ----------------------------------------------------------------------------------
def request_text(request: ModelRequest) -> str:
    """Everything of a request the model reads as text: system prompt, shared context, the messages."""
    return "\n".join([request.system, request.context, *(m.content for m in request.messages)])


def request_chars(request: ModelRequest) -> int:
    return len(request.system) + len(request.context) + sum(len(m.content) for m in request.messages)


def _header_path(line: str) -> str | None:
    """The path of a ``### path (N lines)`` header, else None."""
    if not line.startswith("### ") or not line.endswith(" lines)"):
        return None
    path, sep, count = line[4:].rpartition(" (")
    return path if sep and count.removesuffix(" lines)").isdigit() else None


def _numbered(line: str) -> tuple[int, str] | None:
    """``"{n:>5} | {code}"`` as (n, code), else None (a ``...`` gap, anything else)."""
    number, sep, code = line.partition(" |")
    if not sep or not number.strip().isdigit():
        return None
    return int(number), code[1:] if code.startswith(" ") else code


def shown_lines(text: str) -> dict[str, dict[int, str]]:
    """Code a rendered request shows: path -> line number -> the code shown, read from every
    ``### path (N lines)`` header directly followed by a fenced (untrusted) block of numbered lines."""
    shown: dict[str, dict[int, str]] = {}
    path: str | None = None
    inside = False
    for line in text.splitlines():
        if inside:
            if line.startswith("<<<END UNTRUSTED "):
                inside, path = False, None
                continue
            numbered = _numbered(line)
            if numbered is not None and path is not None:
                shown.setdefault(path, {})[numbered[0]] = numbered[1]
            continue
        if path is not None and line.startswith("<<<UNTRUSTED "):
            inside = True
            continue
        path = _header_path(line)
    return shown


def is_shown(hunk: Hunk, shown: Mapping[str, Mapping[int, str]]) -> bool:
    lines = shown.get(hunk.file, {})
    return all(n in lines for n in hunk.lines)


def reachable_by_asking(hunk: Hunk, sandbox: Sandbox) -> bool:
    """Can the engine's ask tools show this hunk's buggy lines? Asked through the tools themselves
    (``llm.asks.RepositoryView``, as the engine answers a file ask): the answer to "file F, lines a-b" must show
    every buggy line numbered."""
    view = RepositoryView(sandbox.read_file, sandbox.source_files())
    low, high = min(hunk.lines), max(hunk.lines)
    reply = view.file_range(hunk.file, low, high)
    if reply.refused:
        return False
    shown = {int(m.group(1)) for m in re.finditer(r"^\s*(\d+) \| ", reply.body, flags=re.MULTILINE)}
    return all(n in shown for n in hunk.lines)


# -- evidence capture ------------------------------------------------------------------------------------
class EvidenceCapture:
    """An engine that keeps the evidence the healing loop hands its Detective and stops the heal there."""

    name = "recall-capture"
    independent_candidates = False

    def __init__(self) -> None:
        self.evidence: Evidence | None = None

    def usage(self) -> Usage:
        return Usage()

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        return PlanChange()

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        return None

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        return None

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        return None

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        self.evidence = evidence
        raise EngineStopped(StopReason.BUDGET_EXHAUSTED, "recall benchmark: evidence captured, no model asked")

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        return None

    def review(self, request: ReviewRequest) -> Review | None:
        return None  # it only captures the evidence

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        return False

    def candidates(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, history: Sequence[Verification]
    ) -> Iterator[CandidatePatch]:
        return iter(())


def _task_command(task: BenchTask) -> tuple[str, ...]:
    return task.test_command(task.python())


def evidence_path(evidence_dir: Path, task_id: str) -> Path:
    return evidence_dir / f"{task_id}.json"


def meta_path(evidence_dir: Path, task_id: str) -> Path:
    return evidence_dir / f"{task_id}.meta.json"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def capture_evidence(
    task: BenchTask, evidence_dir: Path, isolation: str = "bwrap", time_limit: float = CAPTURE_TIME_LIMIT
) -> dict[str, Any]:
    """The product's heal on the task's buggy repo, with the task's CI JUnit report, up to the Detective: its
    evidence saved as ``ID.json`` and what the capture did as ``ID.meta.json`` (returned)."""
    started = time.monotonic()
    meta: dict[str, Any] = {"id": task.id, "captured": False, "isolation": isolation}
    try:
        with tempfile.TemporaryDirectory(prefix="selfix-recall-") as tmp:
            repo = task.materialize(Path(tmp) / "repo")
            engine = EvidenceCapture()
            settings = HealSettings(mode=engine.name, time_limit=time_limit, isolation=isolation, junit=True)
            _, _, fields = heal_task(
                repo,
                _task_command(task),
                settings,
                task.bug_report,
                task.id,
                Path(tmp) / "out",
                (task.f2p, task.p2p),
                engine=engine,
            )
            meta.update(stop_reason=fields.get("stop_reason"), test_runs=fields.get("test_runs"))
            meta["notes"] = _report_notes(Path(tmp) / "out" / "report.json")  # why coverage was missing, say
        if engine.evidence is not None:
            _write_atomic(evidence_path(evidence_dir, task.id), engine.evidence.model_dump_json(indent=1) + "\n")
            meta["captured"] = True
        else:
            meta["error"] = f"the heal stopped before the Detective: {fields.get('stop_reason')}"
    except Exception as exc:  # one task's trouble (git, pip, the sandbox) is that task's record, not the run's end
        meta["error"] = f"{type(exc).__name__}: {exc}"[:600]
    meta["seconds"] = round(time.monotonic() - started, 1)
    _write_atomic(meta_path(evidence_dir, task.id), json.dumps(meta, indent=1) + "\n")
    return meta


def _report_notes(path: Path) -> list[str]:
    try:
        notes = json.loads(path.read_text(encoding="utf-8")).get("notes", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [str(n) for n in notes] if isinstance(notes, list) else []


def load_evidence(evidence_dir: Path, task_id: str) -> Evidence | None:
    path = evidence_path(evidence_dir, task_id)
    if not path.is_file():
        return None
    try:
        return Evidence.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"unreadable evidence file {path}: {exc}") from exc


def load_meta(evidence_dir: Path, task_id: str) -> dict[str, Any] | None:
    path = meta_path(evidence_dir, task_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- building the requests -----------------------------------------------------------------------------------
class RecordingModel:
    """A ``ChatModel`` in-process: records each request and answers it with something valid for the task (the
    right-location hypothesis, a placeholder QA test, the developers' fix as whole-file edits)."""

    provider = "scripted"
    model = "recall"
    structured = "tools"

    def __init__(self, answers: Mapping[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        answer = self.answers[request.tool]
        return ModelResponse(json.dumps(answer), request.tool, answer, TokenUsage(), "scripted")

    def step_down(self) -> str | None:
        return None

    def preflight(self) -> PreflightResult:
        return PreflightResult(models=(self.model,), note="in-process scripted model")

    def first(self, tool: str, since: int = 0) -> ModelRequest | None:
        return next((r for r in self.requests[since:] if r.tool == tool), None)


def scripted_answers(
    hypothesis: Hypothesis, fixed: Mapping[str, str], buggy: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    edits = [
        {"file": path, "search": buggy[path], "replace": fixed[path]}
        for path in fixed
        if buggy.get(path) and fixed[path] != buggy[path]
    ]
    return {
        DETECTIVE_TOOL: {
            "hypotheses": [
                {
                    "title": hypothesis.title,
                    "confidence": hypothesis.confidence,
                    "file": hypothesis.file,
                    "symbol": hypothesis.symbol,
                    "line_start": hypothesis.lines[0],
                    "line_end": hypothesis.lines[-1],
                    "reasoning": hypothesis.reasoning,
                    "proposed_fix": hypothesis.proposed_fix,
                }
            ]
        },
        QA_TOOL: {
            "test_source": "def test_qa():\n    assert False, 'recall benchmark placeholder'\n",
            "expected_failure": "AssertionError",
        },
        PATCHER_TOOL: {
            "explanation": "the developers' fix",
            "edits": edits or [{"file": "?", "search": "?", "replace": ""}],
        },
        REVIEW_TOOL: {"verdict": "complete", "reason": "recall benchmark placeholder"},
    }


@dataclass(frozen=True)
class Requests:
    """The first request of each role for one task, and what the sandbox's ask tools could reach."""

    detective: ModelRequest | None
    qa: ModelRequest | None
    patcher_a: ModelRequest | None
    patcher_b: ModelRequest | None
    reachable: tuple[bool, ...]


def _patcher_request(
    model: RecordingModel, engine: LLMEngine, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox
) -> ModelRequest | None:
    since = len(model.requests)
    try:
        next(engine.candidates(hypothesis, evidence, sandbox, []), None)
    except EngineStopped:
        pass
    return model.first(PATCHER_TOOL, since)


def build_requests(
    evidence: Evidence,
    sandbox: Sandbox,
    hunks: Sequence[Hunk],
    fixed: Mapping[str, str],
    buggy: Mapping[str, str],
    engine_factory: Callable[[RecordingModel], LLMEngine] | None = None,
) -> Requests:
    """The real engine's Detective, QA and Patcher (variants a and b) requests over a recording model."""

    def make(model: RecordingModel) -> LLMEngine:
        if engine_factory is not None:
            return engine_factory(model)
        return LLMEngine(model, Budget(model="scripted", max_calls=1000), patch_retries=0)

    only_first = right_hypothesis(hunks, buggy, every=False)
    every = right_hypothesis(hunks, buggy, every=True)
    answers = scripted_answers(only_first, fixed, buggy)
    model = RecordingModel(answers)
    engine = make(model)
    try:
        engine.hypotheses(evidence, sandbox, 3)
    except EngineStopped:
        pass
    detective = model.first(DETECTIVE_TOOL)
    since = len(model.requests)
    try:
        engine.qa_test(only_first, evidence, sandbox)
    except EngineStopped:
        pass
    qa = model.first(QA_TOOL, since)
    patcher_a = _patcher_request(model, engine, only_first, evidence, sandbox)
    model_b = RecordingModel(answers)  # a fresh engine: nothing the first Patcher call tried carries over
    patcher_b = _patcher_request(model_b, make(model_b), every, evidence, sandbox)
    return Requests(detective, qa, patcher_a, patcher_b, tuple(reachable_by_asking(h, sandbox) for h in hunks))


# -- measuring one task --------------------------------------------------------------------------------------
def measure_requests(hunks: Sequence[Hunk], buggy: Mapping[str, str], requests: Requests) -> dict[str, Any]:
    """The per-task record: each hunk's figures, their counts, and each role's request size."""
    shown = {
        role: shown_lines(request_text(request)) if request is not None else {}
        for role, request in (
            ("detective", requests.detective),
            ("patcher_a", requests.patcher_a),
            ("patcher_b", requests.patcher_b),
        )
    }
    rows = []
    for hunk, reachable in zip(hunks, requests.reachable, strict=True):
        location = hunk_location(hunk, buggy.get(hunk.file, ""))
        rows.append(
            {
                "key": hunk.key,
                "file": hunk.file,
                "lines": [hunk.lines[0], hunk.lines[-1]],
                "symbol": location.symbol,
                "removed": hunk.removed,
                "added": hunk.added,
                **{role: is_shown(hunk, lines) for role, lines in shown.items()},
                "reachable": reachable,
            }
        )
    chars = {
        role: request_chars(request) if request is not None else None
        for role, request in (
            ("detective", requests.detective),
            ("qa", requests.qa),
            ("patcher_a", requests.patcher_a),
            ("patcher_b", requests.patcher_b),
        )
    }
    return {
        "hunks": len(rows),
        **{figure: sum(1 for r in rows if r[figure]) for figure in FIGURES},
        "chars": chars,
        "hunk_rows": rows,
    }


def measure_task(task: BenchTask, evidence: Evidence) -> dict[str, Any]:
    """One task's record from its cached evidence: a fresh buggy copy in a sandbox that runs no test."""
    fixed, buggy = fix_texts(task)
    hunks = fix_hunks(fixed, buggy)
    if not hunks:
        raise InputError(f"{task.id}: the fix changes no line of a source file")
    with tempfile.TemporaryDirectory(prefix="selfix-recall-") as tmp:
        repo = task.materialize(Path(tmp) / "repo")
        with PytestSandbox(repo, [sys.executable, "-m", "pytest"], limits=Limits(wall_seconds=60), hot=False) as box:
            requests = build_requests(evidence, box, hunks, fixed, buggy)
    return measure_requests(hunks, buggy, requests)


# -- the run -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecallOptions:
    tasks: tuple[Path, ...]
    evidence_dir: Path = Path("results/evidence")
    mirror_dir: Path | None = None
    isolation: str = "bwrap"
    workers: int = 2
    json_out: Path | None = None
    compare: Path | None = None
    recapture: bool = False  # capture again even where evidence (or a failed capture) is cached
    capture_only: bool = False  # capture the missing evidence, measure nothing
    measure_only: bool = False  # measure the tasks whose evidence is cached, capture nothing
    time_limit: float = CAPTURE_TIME_LIMIT
    match: str = ""
    limit: int = 0


def _task_file(task: BenchTask) -> Path:
    return Path(task.base_dir) / f"{task.id}.json"


def load_recall_tasks(paths: Sequence[Path], match: str = "", limit: int = 0) -> list[BenchTask]:
    tasks: list[BenchTask] = []
    for path in paths:
        if not path.exists():
            raise InputError(f"no such task directory or file: {path}")
        tasks += load_bench_tasks(path)
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InputError("the task folders name one task id twice")
    tasks = [t for t in tasks if match in t.id]
    return tasks[:limit] if limit else tasks


def capture_missing(options: RecallOptions, tasks: Sequence[BenchTask], log: Callable[[str], None]) -> None:
    """Capture, ``workers`` at a time (each in its own process, hard timeout), the evidence not yet cached."""
    pending = [
        t
        for t in tasks
        if options.recapture
        or (load_meta(options.evidence_dir, t.id) is None and not evidence_path(options.evidence_dir, t.id).is_file())
    ]
    if not pending:
        return
    log(f"capturing the evidence of {len(pending)} task(s) with {options.workers} worker(s) -> {options.evidence_dir}")
    lock = threading.Lock()
    done = [0]

    def work(task: BenchTask) -> None:
        argv = [
            "selfix_bench.recall",
            "capture",
            str(_task_file(task)),
            "--evidence-dir",
            str(options.evidence_dir),
            "--isolation",
            options.isolation,
            "--time-limit",
            str(options.time_limit),
            *(["--mirror-dir", str(options.mirror_dir)] if options.mirror_dir else []),
        ]
        started = time.monotonic()
        code, tail = run_module(argv, options.time_limit + CAPTURE_GRACE)
        meta = load_meta(options.evidence_dir, task.id)
        if code != 0 or meta is None:
            meta = {"id": task.id, "captured": False, "error": f"capture exit {code}: {tail}"[:600]}
            meta["seconds"] = round(time.monotonic() - started, 1)
            _write_atomic(meta_path(options.evidence_dir, task.id), json.dumps(meta, indent=1) + "\n")
        with lock:
            done[0] += 1
            status = "captured" if meta.get("captured") else f"FAILED: {meta.get('error', '?')}"
            log(f"[{done[0]}/{len(pending)}] {task.id}: {status} ({meta.get('seconds', 0)} s)")

    with ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
        list(pool.map(work, pending))


def measure_all(options: RecallOptions, tasks: Sequence[BenchTask], log: Callable[[str], None]) -> list[dict[str, Any]]:
    records = []
    for task in tasks:
        record: dict[str, Any] = {"id": task.id, "kind": task.kind}
        evidence = load_evidence(options.evidence_dir, task.id)
        if evidence is None:
            meta = load_meta(options.evidence_dir, task.id) or {}
            record["error"] = f"no evidence: {meta.get('error', 'not captured')}"
        else:
            try:
                record.update(measure_task(task, evidence))
            except (InputError, OSError) as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"[:400]
        records.append(record)
        log(format_row(record))
    return records


# -- the table ---------------------------------------------------------------------------------------------
COLUMNS = f"{'task':<22} {'hunks':>5} {'det':>4} {'pat-a':>5} {'pat-b':>5} {'reach':>5}   " + " ".join(
    f"{role + ' chars':>12}" for role in ("det", "qa", "pat-a", "pat-b")
)


def format_row(record: Mapping[str, Any]) -> str:
    if "error" in record:
        return f"{record['id']:<22.22} {record['error']}"
    chars = record["chars"]
    sizes = " ".join(f"{'-' if chars[role] is None else chars[role]:>12}" for role in ROLES)
    return (
        f"{record['id']:<22.22} {record['hunks']:>5} {record['detective']:>4} {record['patcher_a']:>5} "
        f"{record['patcher_b']:>5} {record['reachable']:>5}   {sizes}"
    )


def _share(shown: int, total: int) -> str:
    low, high = wilson_interval(shown, total)
    percent = 100 * shown / total if total else 0.0
    return f"{shown}/{total} = {percent:.1f}% [{100 * low:.1f}-{100 * high:.1f}]"


def summarize(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Totals per kind of task and over all: each figure's share of hunks (95% Wilson interval), the tasks with
    every hunk shown, the median ~tokens per role."""
    out = []
    measured = [r for r in records if "error" not in r]
    kinds = sorted({r["kind"] for r in measured})
    groups = [(kind, [r for r in measured if r["kind"] == kind]) for kind in kinds]
    if len(groups) > 1:
        groups.append(("all", measured))
    for kind, group in groups:
        hunks = sum(r["hunks"] for r in group)
        out.append(f"{kind}: {len(group)} task(s), {hunks} hunk(s)")
        for figure, label in (
            ("detective", "Detective shown"),
            ("patcher_a", "Patcher (a) shown"),
            ("patcher_b", "Patcher (b) shown"),
            ("reachable", f"reachable by asking {REACHABLE_NOTE}"),
        ):
            every = sum(1 for r in group if r[figure] == r["hunks"])
            shown = sum(r[figure] for r in group)
            out.append(f"  {label:<48} hunks {_share(shown, hunks)}; tasks with every hunk {every}/{len(group)}")
        sizes = []
        for role in ROLES:
            values = [r["chars"][role] for r in group if r["chars"].get(role) is not None]
            sizes.append(f"{role} {median(values) / 4:.0f}" if values else f"{role} -")
        out.append("  median ~tokens per request: " + ", ".join(sizes))
    failed = [r for r in records if "error" in r]
    if failed:
        out.append(f"not measured: {len(failed)} task(s): " + "; ".join(f"{r['id']} ({r['error']})" for r in failed))
    return out


def compare(records: Sequence[Mapping[str, Any]], other: Sequence[Mapping[str, Any]], name: str) -> list[str]:
    """Paired with another run's records (``--json`` of an earlier run): per-task differences, then per figure
    the hunks shown in one run only (exact McNemar), and the median paired change of ~tokens per role."""
    theirs = {r["id"]: r for r in other if "error" not in r}
    ours = {r["id"]: r for r in records if "error" not in r}
    shared = [i for i in ours if i in theirs]
    out = [f"compared with {name}: {len(shared)} task(s) measured in both (this run - that run)"]
    for task_id in shared:
        a, b = ours[task_id], theirs[task_id]
        deltas = [f"{f} {a[f] - b[f]:+d}" for f in FIGURES if a[f] != b[f]]
        deltas += [
            f"{role} {(a['chars'][role] - b['chars'][role]) // 4:+d} ~tok"
            for role in ROLES
            if a["chars"].get(role) is not None
            and b["chars"].get(role) is not None
            and abs(a["chars"][role] - b["chars"][role]) >= 4
        ]
        if deltas:
            out.append(f"  {task_id:<22} " + ", ".join(deltas))
    for figure in FIGURES:
        mine = {f"{t}|{h['key']}": bool(h[figure]) for t in shared for h in ours[t]["hunk_rows"]}
        before = {f"{t}|{h['key']}": bool(h[figure]) for t in shared for h in theirs[t]["hunk_rows"]}
        paired = paired_comparison(mine, before)
        out.append(
            f"  {figure:<10} hunks shown in both {paired.both}, this run only {paired.only_a}, that run only "
            f"{paired.only_b}, neither {paired.neither} (exact McNemar p={paired.p_value:.3f})"
        )
    for role in ROLES:
        changes = [
            (ours[t]["chars"][role] - theirs[t]["chars"][role]) / 4
            for t in shared
            if ours[t]["chars"].get(role) is not None and theirs[t]["chars"].get(role) is not None
        ]
        if changes:
            out.append(f"  {role:<10} median paired change {statistics.median(changes):+.0f} ~tokens per request")
    return out


def _git_head() -> str:
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def run_recall(options: RecallOptions, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Capture what evidence is missing, measure every task that has some, print the table and the totals."""
    if options.workers < 1 or options.time_limit <= 0 or options.limit < 0:
        raise InputError("--workers and --time-limit must be positive, --limit at least 0")
    if options.mirror_dir is not None and not options.mirror_dir.is_dir():
        raise InputError(f"no such mirror directory: {options.mirror_dir}")
    other: list[dict[str, Any]] | None = None
    if options.compare is not None:
        try:
            other = list(json.loads(options.compare.read_text(encoding="utf-8"))["tasks"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"--compare: not a recall JSON file ({options.compare}): {exc}") from exc
    realbugs.set_mirror_dir(options.mirror_dir)
    tasks = load_recall_tasks(options.tasks, options.match, options.limit)
    options.evidence_dir.mkdir(parents=True, exist_ok=True)
    if options.capture_only and options.measure_only:
        raise InputError("--capture-only and --measure-only exclude each other")
    if not options.measure_only:
        capture_missing(options, tasks, log)
    if options.capture_only:
        return []
    log("context recall, measured with no model\n" + DEFINITIONS)
    log(COLUMNS)
    records = measure_all(options, tasks, log)
    log("")
    for line in summarize(records):
        log(line)
    if other is not None and options.compare is not None:
        log("")
        for line in compare(records, other, options.compare.name):
            log(line)
    if options.json_out is not None:
        data = {
            "definitions": DEFINITIONS,
            "selfix_commit": _git_head(),
            "evidence_dir": str(options.evidence_dir),
            "tasks": records,
        }
        _write_atomic(options.json_out, json.dumps(data, indent=1) + "\n")
        log(f"wrote {options.json_out}")
    return records


def add_recall_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "tasks",
        nargs="*",
        type=Path,
        default=[Path("bench/realbugs/tasks"), Path("bench/tasks")],
        help="task folders or files (default: bench/realbugs/tasks bench/tasks)",
    )
    parser.add_argument(
        "--evidence-dir", type=Path, default=Path("results/evidence"), help="the evidence cache (results/evidence)"
    )
    parser.add_argument("--mirror-dir", type=Path, help="local git mirrors for real-bug tasks (owner+name/repo)")
    parser.add_argument(
        "--isolation",
        default="bwrap",
        choices=["auto", "bwrap", "landlock", "unshare", "none"],
        help="the evidence capture's sandbox isolation (bwrap)",
    )
    parser.add_argument("--workers", type=int, default=2, help="evidence captures in parallel (2)")
    parser.add_argument("--json", dest="json_out", type=Path, help="write the per-task figures here")
    parser.add_argument("--compare", type=Path, help="another run's --json: per-task differences, paired")
    parser.add_argument("--recapture", action="store_true", help="capture the evidence again, even where cached")
    parser.add_argument("--capture-only", action="store_true", help="capture the missing evidence, measure nothing")
    parser.add_argument(
        "--measure-only", action="store_true", help="measure the tasks whose evidence is cached, capture nothing"
    )
    parser.add_argument(
        "--time-limit", type=float, default=CAPTURE_TIME_LIMIT, help="seconds per evidence capture (900)"
    )
    parser.add_argument("--match", default="", help="only task ids containing this")
    parser.add_argument("--limit", type=int, default=0, help="only the first N tasks (0: all)")


def options_from(args: argparse.Namespace) -> RecallOptions:
    return RecallOptions(
        tasks=tuple(args.tasks),
        evidence_dir=args.evidence_dir,
        mirror_dir=args.mirror_dir,
        isolation=args.isolation,
        workers=args.workers,
        json_out=args.json_out,
        compare=args.compare,
        recapture=args.recapture,
        capture_only=args.capture_only,
        measure_only=args.measure_only,
        time_limit=args.time_limit,
        match=args.match,
        limit=args.limit,
    )


def capture_main(argv: Sequence[str]) -> int:
    """``capture TASK_FILE``: one task's evidence (the worker process ``capture_missing`` starts)."""
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.recall capture")
    parser.add_argument("task", type=Path)
    parser.add_argument("--evidence-dir", type=Path, required=True)
    parser.add_argument("--isolation", default="bwrap")
    parser.add_argument("--time-limit", type=float, default=CAPTURE_TIME_LIMIT)
    parser.add_argument("--mirror-dir", type=Path)
    args = parser.parse_args(argv)
    realbugs.set_mirror_dir(args.mirror_dir)
    meta = capture_evidence(load_bench_task(args.task), args.evidence_dir, args.isolation, args.time_limit)
    print(json.dumps(meta), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["capture"]:
        return capture_main(args_list[1:])
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.recall", description=__doc__.splitlines()[0])
    add_recall_arguments(parser)
    try:
        run_recall(options_from(parser.parse_args(args_list)), log=lambda m: print(m, flush=True))
    except InputError as exc:
        print(f"recall: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
