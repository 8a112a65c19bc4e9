"""Prompts for the Detective, QA and Patcher roles, and the repository context they share.

The context is built once per run from the pruned evidence: failing tests with their project frames, the
localization ranking, and syntax-tree slices (numbered lines) of the most suspicious functions and classes,
their module's top-level definitions and the failing test functions. Never whole large files. It sits right
after the system prompt, so the providers can cache that stable prefix across every call of the run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence

from selfix_action.engine.localize import function_spans
from selfix_action.engine.models import Evidence, Hypothesis, Verification
from selfix_action.untrusted import NOTICE as UNTRUSTED_NOTICE
from selfix_action.untrusted import block, inline

MAX_FAILURES = 5
MAX_MESSAGE_LINES = 8
MAX_MESSAGE_CHARS = 600
MAX_RANKED_LINES = 12
MAX_FUNCTIONS = 5
MAX_FUNCTION_LINES = 60
WINDOW = 10
MAX_MODULE_LINES = 20
MAX_TEST_FUNCTIONS = 3
MAX_TEST_LINES = 30
NEIGHBOUR_LINES = 2

ReadFile = Callable[[str], str]

SYSTEM_PROMPT = (
    """\
You are selfix, an automated program-repair assistant running inside a CI pipeline. A test suite is red;
your job is to find the root cause in the project's source code and propose a minimal fix. You work in three
roles, one per request: Detective (ranked root-cause hypotheses), QA (a small reproduction test for one
hypothesis) and Patcher (search/replace edits). Every answer is checked by running the real tests.

Rules:
- The project's tests are the specification. Never edit test files, conftest.py, test or build configuration,
  or CI files; such edits are refused.
- Ground every claim in the evidence below: failing tests, tracebacks, the localization ranking and the code.
- Keep fixes minimal: change the fewest lines that make the failing tests pass without breaking others.
- Always answer by calling the tool named in the request, with arguments matching its schema.
- If the evidence shows the failure comes from the environment the tests run in (a missing service or network,
  an unwritable home, cache or temp folder, the locale, the terminal, an installed package's version) and not
  from the project's code, say so in environment_problem, with the evidence, and propose no code change.
- Code below is shown with line numbers ("   12 | code"); line numbers are not part of the file.
- """
    + UNTRUSTED_NOTICE
)


# -- the shared repository context -----------------------------------------------------------------------
def build_context(evidence: Evidence, read_file: ReadFile, similar_fixes: str = "") -> str:
    """The evidence the three roles share, as compact text."""
    sections = [
        "# Evidence",
        _failures_section(evidence),
        _localization_section(evidence),
        "## Source code of the suspects (syntax-tree slices; '...' marks omitted lines)",
        render_slices(source_slices(evidence, read_file), read_file),
        "## The failing tests",
        render_slices(test_slices(evidence, read_file), read_file),
        "## Similar past fixes",
        block("similar past fixes", similar_fixes.strip()) if similar_fixes.strip() else "(none recorded yet)",
    ]
    if evidence.user_hint.strip():
        # Comment or dispatch text: anyone with write access (or a listed bot) typed it; still data, not orders.
        sections += ["## Hint from the maintainer", block("maintainer hint", evidence.user_hint.strip(), limit=2000)]
    return "\n\n".join(sections) + "\n"


def baseline_context(evidence: Evidence, read_file: ReadFile, files: Iterable[str]) -> str:
    """What a naive engine would send instead: the same failures, then the given files whole."""
    parts = ["# Evidence", _failures_section(evidence), _localization_section(evidence), "## Files"]
    for path in files:
        try:
            text = read_file(path)
        except OSError:
            continue
        numbered = "\n".join(f"{n:>5} | {line}" for n, line in enumerate(text.splitlines(), 1))
        parts.append(f"### {inline(path)}\n" + block(f"file {path}", numbered, code=True, limit=len(numbered) + 1))
    return "\n\n".join(parts) + "\n"


def _failures_section(evidence: Evidence) -> str:
    out = [f"## Failing tests ({len(evidence.f2p_tests)} fail, {len(evidence.p2p_tests)} pass)"]
    for failure in evidence.failures[:MAX_FAILURES]:
        out.append(f"- {inline(failure.nodeid)}: {failure.status.value} {inline(failure.exc_type, 100)}".rstrip())
        output: list[str] = []
        message = _clip(failure.message)
        if message:
            output += message.splitlines()
        if failure.frames:
            output.append("traceback (project frames, outermost first):")
            output += [f"  {f.file}:{f.line} in {f.function}: {f.code.strip()}" for f in failure.frames[-6:]]
        if output:
            out.append(block("test output", "\n".join(output)))
    if len(evidence.failures) > MAX_FAILURES:
        out.append(f"- ... and {len(evidence.failures) - MAX_FAILURES} more failing test(s)")
    return "\n".join(out)


def _localization_section(evidence: Evidence) -> str:
    out = [f"## Localization ({evidence.localization_note})", "Most suspicious lines:"]
    for item in evidence.suspicious_lines[:MAX_RANKED_LINES]:
        where = f" in {item.function}" if item.function else " (module level)"
        out.append(f"- {item.file}:{item.line}{where} score {item.score:.3f}")
    if evidence.suspicious_functions:
        out.append("Most suspicious functions:")
        for func in evidence.suspicious_functions[:MAX_FUNCTIONS]:
            out.append(f"- {func.file} {func.name} (lines {func.start}-{func.end}) score {func.score:.3f}")
    return "\n".join(out)


def _clip(message: str) -> str:
    lines = message.strip().splitlines()[:MAX_MESSAGE_LINES]
    text = "\n".join(lines)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


# -- slices ----------------------------------------------------------------------------------------------
def source_slices(evidence: Evidence, read_file: ReadFile) -> dict[str, set[int]]:
    """Lines to show per source file: the top suspicious functions (a window around the suspicious lines
    for long ones), the header and attributes of their classes, the module's imports and constants, and
    the neighbourhood of suspicious module-level lines."""
    wanted: dict[str, set[int]] = {}
    suspicious_by_file: dict[str, set[int]] = {}
    for item in evidence.suspicious_lines[: MAX_RANKED_LINES * 2]:
        suspicious_by_file.setdefault(item.file, set()).add(item.line)
    functions = list(evidence.suspicious_functions[:MAX_FUNCTIONS])
    files = list(
        dict.fromkeys([f.file for f in functions] + [s.file for s in evidence.suspicious_lines[:MAX_RANKED_LINES]])
    )
    for path in files:
        try:
            text = read_file(path)
        except OSError:
            continue
        lines = wanted.setdefault(path, set())
        tree = _parse(text)
        lines |= _module_outline(tree)
        for func in (f for f in functions if f.file == path):
            lines |= _function_lines(func.start, func.end, suspicious_by_file.get(path, set()))
            if "." in func.name and tree is not None:
                lines |= _class_outline(tree, func.name.rsplit(".", 1)[0])
        spans = function_spans(path, text)
        for line in suspicious_by_file.get(path, set()):
            if not any(s.start <= line <= s.end for s in spans):
                lines |= set(range(line - NEIGHBOUR_LINES, line + NEIGHBOUR_LINES + 1))
    return wanted


def symbol_slice(path: str, symbol: str, around: Sequence[int], read_file: ReadFile) -> dict[str, set[int]]:
    """Lines of ``symbol`` in ``path`` (a window around ``around`` when it is long or not found)."""
    try:
        text = read_file(path)
    except OSError:
        return {}
    for span in function_spans(path, text):
        if span.name == symbol or span.name.endswith("." + symbol):
            return {path: _function_lines(span.start, span.end, set(around))}
    tree = _parse(text)
    lines = _class_outline(tree, symbol) if tree is not None else set()
    for line in around:
        lines |= set(range(line - NEIGHBOUR_LINES * 2, line + NEIGHBOUR_LINES * 2 + 1))
    return {path: lines}


def test_slices(evidence: Evidence, read_file: ReadFile) -> dict[str, set[int]]:
    """The failing test functions and their module's imports, so QA tests can import the same way."""
    wanted: dict[str, set[int]] = {}
    seen = 0
    for nodeid in evidence.f2p_tests:
        if seen >= MAX_TEST_FUNCTIONS:
            break
        path, _, rest = nodeid.partition("::")
        name = rest.split("::")[-1].split("[")[0]
        try:
            text = read_file(path)
        except OSError:
            continue
        tree = _parse(text)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                last = min(node.end_lineno or node.lineno, first + MAX_TEST_LINES - 1)
                lines = wanted.setdefault(path, set())
                if not lines:
                    lines |= _module_outline(tree)
                lines |= set(range(first, last + 1))
                seen += 1
                break
    return wanted


def render_slices(wanted: dict[str, set[int]], read_file: ReadFile) -> str:
    if not wanted:
        return "(no code to show)"
    out = []
    for path, lines in wanted.items():
        try:
            text = read_file(path).splitlines()
        except OSError:
            continue
        shown = sorted(n for n in lines if 1 <= n <= len(text))
        numbered: list[str] = []
        previous = 0
        for n in shown:
            if n > previous + 1:
                numbered.append("  ...")
            numbered.append(f"{n:>5} | {text[n - 1]}")
            previous = n
        if previous < len(text):
            numbered.append("  ...")
        body = "\n".join(numbered)
        fenced = block(f"file {path}", body, code=True, limit=len(body) + 1)
        out.append(f"### {inline(path)} ({len(text)} lines)\n{fenced}")
    return "\n\n".join(out)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _function_lines(start: int, end: int, suspicious: set[int]) -> set[int]:
    if end - start + 1 <= MAX_FUNCTION_LINES:
        return set(range(start, end + 1))
    lines = set(range(start, start + 3))  # the signature
    inside = sorted(line for line in suspicious if start <= line <= end) or [start]
    for line in inside[:6]:
        lines |= set(range(max(start, line - WINDOW), min(end, line + WINDOW) + 1))
    return lines


def _module_outline(tree: ast.Module | None) -> set[int]:
    """Imports and module-level assignments (not the docstring), up to ``MAX_MODULE_LINES`` lines."""
    lines: set[int] = set()
    if tree is None:
        return lines
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign | ast.AugAssign):
            span = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            if len(lines) + len(span) > MAX_MODULE_LINES:
                break
            lines |= span
    return lines


def _class_outline(tree: ast.Module, qualified: str) -> set[int]:
    """The class's header and its class-level statements (attributes), not its other methods."""
    node: ast.AST = tree
    for part in qualified.split("."):
        found = next((c for c in ast.iter_child_nodes(node) if isinstance(c, ast.ClassDef) and c.name == part), None)
        if found is None:
            return set()
        node = found
    assert isinstance(node, ast.ClassDef)
    lines = set(range(node.lineno, node.body[0].lineno if node.body else node.lineno + 1))
    for stmt in node.body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Expr):
            lines |= set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


# -- role requests -------------------------------------------------------------------------------------
def detective_request(count: int, asks_left: int = 0) -> str:
    return f"""\
Role: Detective.
From the evidence above, give up to {count} genuinely different root-cause hypotheses for the failing tests,
most likely first. Different means a different location or a different mechanism, not a rewording. Each names
a project source file shown above (never a test file), the function, method (Class.method) or module
constant, the line range, the reasoning that ties it to the tracebacks and the ranking, and the fix you
propose. Confidence is your probability that the hypothesis is the root cause.{ask_offer(asks_left)}
Call the report_hypotheses tool."""


def describe_hypothesis(hypothesis: Hypothesis) -> str:
    lines = f"{hypothesis.lines[0]}-{hypothesis.lines[-1]}" if hypothesis.lines else "?"
    return (
        f"{hypothesis.id}: {hypothesis.title}\n"
        f"  location: {hypothesis.file} {hypothesis.symbol} (lines {lines}), "
        f"confidence {hypothesis.confidence:.2f}\n"
        f"  reasoning: {hypothesis.reasoning}\n"
        f"  proposed fix: {hypothesis.proposed_fix}"
    )


def qa_request(hypothesis: Hypothesis, path: str, feedback: str = "") -> str:
    """The QA request; ``feedback`` says why the previous reproduction test was broken (it failed in its own
    code, or could not be collected), as untrusted test output."""
    retry = ""
    if feedback:
        retry = (
            "\n\nYour previous reproduction test for this hypothesis did not run as a test: it failed in its own "
            "code, not in the project's. Write a corrected one.\n" + block("QA test output", feedback, limit=2500)
        )
    return f"""\
Role: QA.
Hypothesis under test:
{describe_hypothesis(hypothesis)}

Write a small pytest module (it is saved as _selfix_qa/{path} and run from the repository root, with
the project importable exactly as the failing tests import it) that reproduces THIS hypothesis. It must
FAIL on the current code with an AssertionError (or the exception the hypothesis predicts), and PASS once
the hypothesized fix is applied. It must not fail because of an import error, a typo or a missing
fixture. Use one or two test functions, plain asserts, no network, no files outside a tmp_path,
nothing from conftest.py. If the hypothesis is wrong, an honest test passes on the current code: that is
how we rule it out.{retry}
Call the write_reproduction_test tool."""


def patcher_request(
    hypothesis: Hypothesis, code: str, attempts: Sequence[str], correction: str = "", asks_left: int = 0
) -> str:
    previous = ""
    if attempts:
        previous = "\n\nEarlier attempts for this hypothesis, and why they failed (do not repeat them):\n" + "\n".join(
            f"- attempt {n}: {text}" for n, text in enumerate(attempts, 1)
        )
    return f"""\
Role: Patcher.
Fix the bug described by this hypothesis:
{describe_hypothesis(hypothesis)}

Current code at that location:
{code}{previous}

Return the smallest search/replace edits that fix it. Each search text is copied verbatim from the current
file (indentation included, line numbers excluded) and must match exactly one place in that file; include a
few surrounding lines if needed. Edit only the project's source files. Never edit tests, conftest.py,
configuration or CI files.{ask_offer(asks_left)}
Call the propose_edits tool.{correction}"""


def describe_failure(verdict: Verification) -> str:
    detail = verdict.detail or ", ".join(verdict.failing_tests[:3])
    return f"verification failed at {verdict.stage.value}:\n" + block("verification output", detail, limit=1500)


def corrective_request(tool: str, problem: str) -> str:
    return (
        f"Your previous answer could not be used: {problem}\n"
        f"Call the {tool} tool again with a corrected, complete answer."
    )


def ask_offer(asks_left: int) -> str:
    """The paragraph of the Detective's and the Patcher's requests that offers asks for more context ("" when none
    are left)."""
    if asks_left <= 0:
        return ""
    return (
        "\nIf what is shown is not enough to answer with confidence, ask instead of guessing: answer with only "
        f"`asks` (at most 4 per answer; {asks_left} left in this run), each a file's line range (kind file, path, "
        "line_start, line_end), a definition (kind symbol, name: a function, Class.method, class or constant) or a "
        "search of the source and test files (kind search, pattern, regex true for a regular expression, "
        "case-sensitive). The answers come back, then you give your answer."
    )
