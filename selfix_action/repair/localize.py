"""Fault localization: which lines and functions most likely hold the bug.

With per-test coverage, lines get the Ochiai spectrum score (ef / sqrt(F * (ef + ep))): high when failing tests
run the line and passing tests do not. Frames of the failing tracebacks inside the project's source add weight.
Without coverage, the tracebacks and the functions the failing tests call (found statically) are all we have.
"""

from __future__ import annotations

import ast
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from selfix_action.repair.languages import FunctionSpan, function_spans, is_node_file, node_names_in_test
from selfix_action.repair.reported import TITLE_JOIN
from selfix_action.repair.values import SuspiciousFunction, SuspiciousLine, TestResult

__all__ = ["FunctionSpan", "Localization", "enclosing_function", "function_spans", "localize", "ochiai"]

INNERMOST_FRAME_BONUS = 0.3
OUTER_FRAME_BONUS = 0.1
MAX_LINES = 300


def enclosing_function(spans: Sequence[FunctionSpan], line: int) -> FunctionSpan | None:
    best = None
    for span in spans:
        if span.start <= line <= span.end and (best is None or span.start >= best.start):
            best = span
    return best


@dataclass(frozen=True)
class Localization:
    lines: tuple[SuspiciousLine, ...]
    functions: tuple[SuspiciousFunction, ...]
    coverage_used: bool
    note: str


def ochiai(ef: int, ep: int, total_failed: int) -> float:
    if ef == 0 or total_failed == 0:
        return 0.0
    return ef / math.sqrt(total_failed * (ef + ep))


def localize(
    failures: Sequence[TestResult],
    passing: Iterable[str],
    coverage: Mapping[str, Mapping[str, Sequence[int]]] | None,
    sources: Mapping[str, str],
    test_sources: Mapping[str, str] | None = None,
) -> Localization:
    """Rank suspicious lines of the project's source files (``sources``: path -> text, tests excluded)."""
    spans = {file: function_spans(file, text) for file, text in sources.items()}
    scores: dict[tuple[str, int], float] = defaultdict(float)
    failing_ids = [f.nodeid for f in failures]
    covered_failing = [t for t in failing_ids if coverage and t in coverage]
    coverage_used = bool(covered_failing)
    if coverage_used:
        assert coverage is not None
        ef: dict[tuple[str, int], int] = defaultdict(int)
        ep: dict[tuple[str, int], int] = defaultdict(int)
        for test in covered_failing:
            for file, lines in coverage[test].items():
                if file in sources:
                    for line in lines:
                        ef[(file, line)] += 1
        for test in passing:
            for file, lines in coverage.get(test, {}).items():
                if file in sources:
                    for line in lines:
                        ep[(file, line)] += 1
        for key, count in ef.items():
            scores[key] = ochiai(count, ep.get(key, 0), len(covered_failing))
        _score_definitions(coverage, covered_failing, passing, sources, scores)
        note = f"per-test coverage of {len(covered_failing)} failing and {len(list(passing))} passing tests"
    else:
        _static_scores(failures, spans, test_sources or {}, scores)
        note = "no per-test coverage: ranking from tracebacks and the functions the failing tests call"

    # A test module that failed to collect: the project modules it imports.
    for failure in failures:
        if "::" not in failure.nodeid:
            _score_failed_import(failure, spans, (test_sources or {}).get(failure.nodeid, ""), scores)

    # Tracebacks: the frames in the project's source where the failure actually happened.
    for failure in failures:
        source_frames = [f for f in failure.frames if f.file in sources]
        for depth, frame in enumerate(reversed(source_frames)):
            bonus = INNERMOST_FRAME_BONUS if depth == 0 else OUTER_FRAME_BONUS
            scores[(frame.file, frame.line)] += bonus / max(1, len(failures))

    ranked_lines = []
    for (file, line), score in scores.items():
        if score <= 0:
            continue
        func = enclosing_function(spans.get(file, []), line)
        ranked_lines.append(
            SuspiciousLine(file=file, line=line, score=round(score, 6), function=func.name if func else None)
        )
    ranked_lines.sort(key=lambda s: (-s.score, s.file, s.line))
    ranked_lines = ranked_lines[:MAX_LINES]

    best_by_function: dict[tuple[str, str], SuspiciousFunction] = {}
    for item in ranked_lines:
        func = enclosing_function(spans.get(item.file, []), item.line)
        if func is None:
            continue
        function_key = (func.file, func.name)
        if function_key not in best_by_function:
            best_by_function[function_key] = SuspiciousFunction(
                file=func.file, name=func.name, start=func.start, end=func.end, score=item.score
            )
    functions = sorted(best_by_function.values(), key=lambda f: (-f.score, f.file, f.start))
    return Localization(tuple(ranked_lines), tuple(functions), coverage_used, note)


def _static_scores(
    failures: Sequence[TestResult],
    spans: Mapping[str, list[FunctionSpan]],
    test_sources: Mapping[str, str],
    scores: dict[tuple[str, int], float],
) -> None:
    """Without coverage: the functions named in the failing tests (and those they call) are suspects."""
    by_name: dict[str, list[FunctionSpan]] = defaultdict(list)
    for file_spans in spans.values():
        for span in file_spans:
            by_name[span.name.rsplit(".", 1)[-1]].append(span)

    def mark(span: FunctionSpan, weight: float) -> None:
        for line in span.statement_lines:
            scores[(span.file, line)] = max(scores[(span.file, line)], weight)

    for failure in failures:
        frames_in_source = [f for f in failure.frames if f.file in spans]
        for frame in frames_in_source:
            func = enclosing_function(spans[frame.file], frame.line)
            if func is not None:
                mark(func, 0.5)
        test_file, _, test_name = failure.nodeid.partition("::")
        if is_node_file(test_file):
            titles = tuple(test_name.split(TITLE_JOIN)) if test_name else ()
            called = node_names_in_test(test_file, test_sources.get(test_file, ""), titles)
        else:
            called = _names_in_test(test_sources.get(test_file, ""), test_name)
        for name in called:
            for span in by_name.get(name, []):
                mark(span, 0.3)
                for inner in span.called_names:
                    for callee in by_name.get(inner, []):
                        mark(callee, 0.15)


MODULE_NAMED_BY_ERROR = 0.5  # the module an ImportError names ("cannot import name 'b' from 'pkg.mod'")
MODULE_IMPORTED = 0.2  # another project module the test module imports


def _score_failed_import(
    failure: TestResult, spans: Mapping[str, list[FunctionSpan]], test_source: str, scores: dict[tuple[str, int], float]
) -> None:
    """A test module that failed to collect (its node id is its path): nothing ran, so no coverage and no frame
    in the project. Its suspects are the project modules it imports, first the one the error names; their
    top-level statements are marked (the missing name is added, or a changed one restored, at the top level)."""
    named = set(re.findall(r"""from '([\w.]+)'|No module named '([\w.]+)'|module '([\w.]+)' has no""", failure.message))
    by_error = {module for groups in named for module in groups if module}
    imported: set[str] = set()
    try:
        tree = ast.parse(test_source) if test_source else None
    except SyntaxError:
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)  # a submodule imported by name
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    for module in by_error | imported:
        weight = MODULE_NAMED_BY_ERROR if module in by_error else MODULE_IMPORTED
        files = _module_files(module, spans)
        parts = module.split(".")
        while not files and module in by_error and len(parts) > 1:
            parts.pop()  # a project module that does not exist yet ("No module named 'shop.vat'"): its package
            files = _module_files(".".join(parts), spans)
        for file in files:
            for line in _top_level_lines(spans[file], file):
                scores[(file, line)] = max(scores[(file, line)], weight)


def _module_files(module: str, files: Iterable[str]) -> list[str]:
    """The project files that can be ``module`` (``pkg/mod.py``, ``pkg/mod/__init__.py``, also below ``src/``)."""
    stem = module.replace(".", "/")
    wanted = (f"{stem}.py", f"{stem}/__init__.py")
    return sorted(f for f in files if any(f == w or f.endswith("/" + w) for w in wanted))


def _top_level_lines(file_spans: Sequence[FunctionSpan], file: str) -> list[int]:
    """The first line of each top-level function (a def is where a missing name's neighbours are)."""
    return sorted({span.start for span in file_spans if "." not in span.name} or {1})


def _names_in_test(source: str, test_name: str) -> set[str]:
    if not source or not test_name:
        return set()
    wanted = test_name.split("::")[-1].split("[")[0]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == wanted:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name):
                    names.add(inner.id)
                elif isinstance(inner, ast.Attribute):
                    names.add(inner.attr)
    return names


def definition_uses(source: str) -> dict[int, set[int]]:
    """Module constants and class attributes (``LIMIT = 4``): definition line -> lines that read them.

    Such lines run once at import, outside any test, so coverage never blames them; their uses do.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    module_defs: dict[str, int] = {}
    class_defs: dict[str, int] = {}
    scopes = [(tree.body, module_defs)] + [
        (node.body, class_defs) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    ]
    for body, defs in scopes:
        for stmt in body:
            targets = (
                stmt.targets
                if isinstance(stmt, ast.Assign)
                else [stmt.target]
                if isinstance(stmt, ast.AnnAssign)
                else []
            )
            for target in targets:
                if isinstance(target, ast.Name):
                    defs.setdefault(target.id, stmt.lineno)
    uses: dict[int, set[int]] = defaultdict(set)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in module_defs:
            uses[module_defs[node.id]].add(node.lineno)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in class_defs:
            uses[class_defs[node.attr]].add(node.lineno)
    return uses


def _score_definitions(
    coverage: Mapping[str, Mapping[str, Sequence[int]]],
    failing: Sequence[str],
    passing: Iterable[str],
    sources: Mapping[str, str],
    scores: dict[tuple[str, int], float],
) -> None:
    """A definition is "executed" by every test that runs a line reading it: score it like any line."""
    passing = list(passing)
    for file, source in sources.items():
        for def_line, use_lines in definition_uses(source).items():

            def reads(test: str, file: str = file, use_lines: set[int] = use_lines) -> bool:
                return not use_lines.isdisjoint(coverage.get(test, {}).get(file, ()))

            ef = sum(1 for test in failing if reads(test))
            ep = sum(1 for test in passing if reads(test))
            score = ochiai(ef, ep, len(failing))
            if score > scores.get((file, def_line), 0.0):
                scores[(file, def_line)] = score
