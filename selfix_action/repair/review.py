"""The reviewer's question and answer: one look at a confirmed patch by a role that did not write it.

``review_request`` gathers what the reviewer sees, from values the loop already holds: the failing tests as the
evidence has them, the hypothesis the patch answers, the patch's diff, the behaviour table (the inputs whose
outcome the patch changed, when a probe measured them) and the edited functions whole as the patch leaves them.
``Review`` is the verdict: complete, partial (a case of the same bug it leaves failing) or wrong. It is one
piece of evidence for the confidence rule (``plausibility.REVIEW_LEVELS``), never the only reason for high.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from selfix_action.repair.localize import enclosing_function, function_spans
from selfix_action.repair.values import Hypothesis, TestResult

ReviewVerdict = Literal["complete", "partial", "wrong"]

MODULE_WINDOW = 8  # lines shown either side of an edit outside any function
MAX_CODE_LINES = 150  # of one edited function: a longer one is cut there (said in its heading)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ReviewedCode(_Frozen):
    """One edited function (or the module lines around an edit outside any), as the patch leaves it."""

    file: str
    symbol: str  # qualified function name; "" for module-level code
    start: int  # first line shown, in the patched file
    source: str  # the lines shown, as they read
    # False for a class's constructor shown beside its edited method: how the object is built is where the
    # other half of a partial fix often lies (a base class' __init__ never called), and it reads unedited.
    edited: bool = True


class ReviewRequest(_Frozen):
    """What the reviewer sees of one confirmed patch."""

    failures: tuple[TestResult, ...]  # the failing tests, messages and project frames as the evidence has them
    hypothesis: Hypothesis
    diff: str
    code: tuple[ReviewedCode, ...]
    # The inputs whose outcome the patch changed, old -> new, as text (the behaviour probe's table); "" when no
    # probe measured it.
    behaviour: str = ""


class Review(_Frozen):
    """The reviewer's verdict on a confirmed patch."""

    verdict: ReviewVerdict
    reason: str
    missed: str = ""  # partial or wrong: an input or case the patch gets wrong


def edited_code(originals: Mapping[str, str], files: Mapping[str, str]) -> tuple[ReviewedCode, ...]:
    """The functions the patch edits, whole, as they read in the patched files (each once, in file order); an
    edit outside every function shows the lines around it."""
    shown: list[ReviewedCode] = []
    seen: set[tuple[str, str, int]] = set()
    for path in sorted(files):
        before = originals.get(path, "").splitlines(keepends=True)
        after_text = files[path]
        after = after_text.splitlines(keepends=True)
        spans = function_spans(path, after_text)
        matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
        for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            first, last = j1 + 1, max(j1 + 1, j2)  # the new lines (a deletion: the line after it)
            span = enclosing_function(spans, min(first, max(1, len(after))))
            if span is not None:
                start, end, symbol = span.start, span.end, span.name
            else:
                start, end, symbol = max(1, first - MODULE_WINDOW), min(len(after), last + MODULE_WINDOW), ""
            key = (path, symbol, start if not symbol else 0)
            if key in seen:
                continue
            seen.add(key)
            lines = after[start - 1 : min(end, start - 1 + MAX_CODE_LINES)]
            shown.append(ReviewedCode(file=path, symbol=symbol, start=start, source="".join(lines)))
    edited = {(code.file, code.symbol) for code in shown}
    builders = [
        builder
        for path in sorted(files)
        for builder in _constructors(path, files[path], {s for f, s in edited if f == path and s})
        if (builder.file, builder.symbol) not in edited
    ]
    return tuple(shown) + tuple(dict.fromkeys(builders))


CONSTRUCTORS = ("__new__", "__init__", "__post_init__")


def _constructors(path: str, source: str, symbols: set[str]) -> list[ReviewedCode]:
    """For each edited method, how its class builds an object, unedited: the class statement (its bases and
    decorators) and the class's own constructors. A class defined in a function is left out."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines(keepends=True)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    shown: list[ReviewedCode] = []
    for symbol in sorted(symbols):
        owner, _, method = symbol.rpartition(".")
        node = classes.get(owner)
        if node is None or "." in owner or method in CONSTRUCTORS:
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        header_end = node.body[0].lineno - 1 if node.body else node.lineno
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            header_end = node.body[0].end_lineno or header_end  # the docstring says what the class is
        shown.append(
            ReviewedCode(
                file=path, symbol=owner, start=first, source="".join(lines[first - 1 : header_end]), edited=False
            )
        )
        for child in node.body:
            if isinstance(child, ast.FunctionDef) and child.name in CONSTRUCTORS:
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                end = min(child.end_lineno or child.lineno, start - 1 + MAX_CODE_LINES)
                shown.append(
                    ReviewedCode(
                        file=path,
                        symbol=f"{owner}.{child.name}",
                        start=start,
                        source="".join(lines[start - 1 : end]),
                        edited=False,
                    )
                )
    return shown


def review_request(
    *,
    failures: tuple[TestResult, ...],
    hypothesis: Hypothesis,
    diff: str,
    originals: Mapping[str, str],
    files: Mapping[str, str],
    behaviour: str = "",
) -> ReviewRequest:
    return ReviewRequest(
        failures=failures,
        hypothesis=hypothesis,
        diff=diff,
        code=edited_code(originals, files),
        behaviour=behaviour,
    )
