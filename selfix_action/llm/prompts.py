"""Prompts for the Detective, QA and Patcher roles, and the repository context they share.

The context is built once per run from the pruned evidence: failing tests with their project frames, the
localization ranking, and syntax-tree slices (numbered lines) of the most suspicious functions and classes,
their module's top-level definitions and the failing test functions. Never whole large files. It sits right
after the system prompt, so the providers can cache that stable prefix across every call of the run.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from selfix_action.llm.imports import import_lines, test_helper_imports
from selfix_action.llm.test_uses import built_classes, constructor_lines, find_class, used_helpers
from selfix_action.repair.languages import (
    NODE_MODULE_SUFFIXES,
    is_node_file,
    node_outline,
    node_relative_imports,
    node_test_lines,
)
from selfix_action.repair.localize import FunctionSpan, enclosing_function, function_spans
from selfix_action.repair.paths import is_test_path
from selfix_action.repair.reported import TITLE_JOIN
from selfix_action.repair.reported_error import ReproductionRequest
from selfix_action.repair.review import Review, ReviewedCode, ReviewRequest
from selfix_action.repair.values import Evidence, Hypothesis, Location, TestResult, Verification
from selfix_action.untrusted import NOTICE as UNTRUSTED_NOTICE
from selfix_action.untrusted import block, inline

MAX_FAILURES = 5
MAX_MESSAGE_LINES = 8
MAX_MESSAGE_CHARS = 600
MAX_RANKED_LINES = 20
MAX_FUNCTIONS = 8
MAX_FUNCTION_LINES = 60
WINDOW = 10
MAX_WINDOWS = 6
MAX_MODULE_LINES = 30
MAX_HELPER_IMPORTS = 20
MIN_CONSTANT_LINES = 10  # a module's constants still show when its imports fill MAX_MODULE_LINES
MAX_FRAMES_PER_FAILURE = 3
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
- Answer each request in the form named at its end, matching the schema given there exactly.
- If the evidence shows the failure comes from the environment the tests run in (a missing service or network,
  an unwritable home, cache or temp folder, the locale, the terminal, an installed package's version) and not
  from the project's code, say so in environment_problem, with the evidence, and propose no code change.
- Code below is shown with line numbers ("   12 | code"); line numbers are not part of the file.
- """
    + UNTRUSTED_NOTICE
)


# -- the shared repository context -----------------------------------------------------------------------
def build_context(
    evidence: Evidence, read_file: ReadFile, similar_fixes: str = "", slices: Mapping[str, set[int]] | None = None
) -> str:
    """The evidence the three roles share, as compact text; ``slices`` are ``source_slices(evidence, read_file)``
    when the caller has them already (the engine uses them for the schemas' file enum too)."""
    if slices is None:
        slices = source_slices(evidence, read_file)
    sections = [
        "# Evidence",
        *_python_line(evidence),
        _failures_section(evidence),
        _localization_section(evidence),
        "## Source code of the suspects (syntax-tree slices; '...' marks omitted lines)",
        render_slices(dict(slices), read_file),
        "## The failing tests",
        render_slices(test_slices(evidence, read_file), read_file),
        "## Similar past fixes",
        block("similar past fixes", similar_fixes.strip()) if similar_fixes.strip() else "(none recorded yet)",
    ]
    if evidence.reported_error.strip():
        sections += [
            "## The production error this heal started from (the failing test reproduces it)",
            block("reported error", evidence.reported_error, limit=6000),
        ]
    if evidence.user_hint.strip():
        # Comment or dispatch text: anyone with write access (or a listed bot) typed it; still data, not orders.
        sections += ["## Hint from the maintainer", block("maintainer hint", evidence.user_hint.strip(), limit=2000)]
    return "\n\n".join(sections) + "\n"


def _python_line(evidence: Evidence) -> list[str]:
    """The interpreter the tests run on, when the baseline run reported it: a fix and a QA test must be valid for
    it (no ``match`` on 3.8, no ``X | Y`` annotations evaluated before 3.10)."""
    if evidence.toolchain:
        return [
            f"This is a JavaScript/TypeScript project; its tests run with {inline(evidence.toolchain, 80)}: code you "
            "write must run there, in the language and module style (require or import) of the file it goes in."
        ]
    if not evidence.python_version:
        return []
    return [f"The project's tests run on Python {inline(evidence.python_version, 40)}: code you write must run there."]


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
    """Lines to show per source file, so that what localization ranks highest is always in view:

    - every line of the ranking shown in the prompt (``MAX_RANKED_LINES``), inside its enclosing function, whole
      when it fits (``MAX_FUNCTION_LINES``), else the signature and a window around the line; the top
      suspicious functions the same way, with windows around their ranked lines, highest ranked first;
    - the header and attributes of the classes of the methods shown;
    - the functions of the project's own traceback frames (where the failure was raised);
    - the modules an error message names (``module 'x.y' has no attribute 'z'``, ``cannot import name 'z' from
      'x.y'``): their imports, constants and the list of what they define;
    - for every file shown, its imports and module constants.
    """
    read_file = _read_once(read_file)  # every candidate file is read to learn that it exists, then again to slice
    source_files = _known(read_file)
    ranked = [item for item in evidence.suspicious_lines[:MAX_RANKED_LINES] if source_files(item.file)]
    # Lines ranked just below those listed still open windows in long functions shown anyway.
    wider = evidence.suspicious_lines[MAX_RANKED_LINES : MAX_RANKED_LINES * 2]
    functions = [f for f in evidence.suspicious_functions[:MAX_FUNCTIONS] if source_files(f.file)]
    frames = _project_frames(evidence, source_files)
    named = _modules_named(evidence, source_files)
    order = [f.file for f in functions] + [s.file for s in ranked] + [f[0] for f in frames] + named
    wanted: dict[str, set[int]] = {}
    for path in dict.fromkeys(order):
        try:
            text = read_file(path)
        except (OSError, UnicodeDecodeError):
            continue
        tree = _parse(text) if not is_node_file(path) else None
        spans = _with_decorators(function_spans(path, text), tree)
        lines = wanted.setdefault(path, set())
        lines |= _outline(path, text, tree)
        by_rank = [item.line for item in ranked if item.file == path]
        windows = by_rank + [item.line for item in wider if item.file == path]
        decorated = _decorator_starts(tree)
        for func in (f for f in functions if f.file == path):
            lines |= _function_lines(decorated.get(func.start, func.start), func.end, windows)
        for line in by_rank + [line for file, line in frames if file == path]:
            lines |= _around(spans, line, by_rank)
        if path in named and tree is not None:
            lines |= _definitions_index(tree)
        if tree is not None:
            for name in {span.name.rsplit(".", 1)[0] for span in spans if "." in span.name and lines & _span(span)}:
                lines |= _class_outline(tree, name) | constructor_lines(tree, name)
    # The classes the failing tests build, with their constructors: what the objects under test hold.
    for test_path, test_tree, node, _ in _failing_test_nodes(evidence, read_file):
        for path, lines in built_classes(node, test_tree, test_path, read_file).items():
            if source_files(path):
                if path not in wanted:
                    wanted[path] = _module_outline(_parse(read_file(path)))
                wanted[path] |= lines
    return wanted


def _failing_test_nodes(
    evidence: Evidence, read_file: ReadFile
) -> Iterator[tuple[str, ast.Module, ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]]:
    """(test file, its tree, the test function, its class) of the first ``MAX_TEST_FUNCTIONS`` failing tests
    found."""
    seen = 0
    for nodeid in evidence.f2p_tests:
        if seen >= MAX_TEST_FUNCTIONS:
            return
        path, _, rest = nodeid.partition("::")
        parts = [p.split("[")[0] for p in rest.split("::") if p]
        try:
            tree = _parse(read_file(path))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        found = _find_test(tree, parts) if tree is not None and parts else None
        if tree is None or found is None:
            continue
        seen += 1
        yield path, tree, found[0], found[1]


def _read_once(read_file: ReadFile) -> ReadFile:
    """``read_file`` with each path's text (or its error) kept: one call reads a file at most once."""
    texts: dict[str, str | Exception] = {}

    def read(path: str) -> str:
        if path not in texts:
            try:
                texts[path] = read_file(path)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                texts[path] = exc
        text = texts[path]
        if isinstance(text, Exception):
            raise text
        return text

    return read


def _known(read_file: ReadFile) -> Callable[[str], bool]:
    """Whether a path names a project source file (not a test, not a library's file): one that can be read."""

    def known(path: str) -> bool:
        if not path or path.startswith("/") or is_test_path(path):
            return False
        try:
            read_file(path)
        except (OSError, UnicodeDecodeError, ValueError):
            return False
        return True

    return known


def _project_frames(evidence: Evidence, known: Callable[[str], bool]) -> list[tuple[str, int]]:
    """(file, line) of the innermost project source frames of the failures shown, innermost first."""
    found: list[tuple[str, int]] = []
    for failure in evidence.failures[:MAX_FAILURES]:
        inner = [f for f in failure.frames if known(f.file)][-MAX_FRAMES_PER_FAILURE:]
        found += [(f.file, f.line) for f in reversed(inner)]
    return list(dict.fromkeys(found))


# Error messages that name a module (Python's own wording): the module is where the missing name belongs.
MODULE_IN_MESSAGE = (
    re.compile(r"module '([\w.]+)' has no attribute '\w+'"),
    re.compile(r"cannot import name '\w+' from '([\w.]+)'"),
    re.compile(r"No module named '([\w.]+)'"),
)


def _modules_named(evidence: Evidence, known: Callable[[str], bool]) -> list[str]:
    """Source files of the modules the failures' messages name (for a missing submodule, its nearest parent)."""
    found: list[str] = []
    for failure in evidence.failures[:MAX_FAILURES]:
        for pattern in MODULE_IN_MESSAGE:
            for match in pattern.finditer(failure.message):
                parts = match.group(1).split(".")
                for size in range(len(parts), 0, -1):
                    stem = "/".join(parts[:size])
                    candidates = [
                        f"{root}{stem}{end}" for root in ("", "src/", "lib/") for end in (".py", "/__init__.py")
                    ]
                    path = next((c for c in candidates if known(c)), None)
                    if path is not None:
                        found.append(path)
                        break
    return list(dict.fromkeys(found))


def _decorator_starts(tree: ast.Module | None) -> dict[int, int]:
    """A decorated function's ``def`` line -> its first decorator's line."""
    if tree is None:
        return {}
    return {
        node.lineno: min(d.lineno for d in node.decorator_list)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.decorator_list
    }


def _with_decorators(spans: list[FunctionSpan], tree: ast.Module | None) -> list[FunctionSpan]:
    """The spans starting at their first decorator (``@click.option(...)`` lines are part of the function)."""
    first = _decorator_starts(tree)
    return [dataclasses.replace(span, start=first.get(span.start, span.start)) for span in spans]


def _span(span: FunctionSpan) -> set[int]:
    return set(range(span.start, span.end + 1))


def _around(spans: Sequence[FunctionSpan], line: int, ranked: Sequence[int]) -> set[int]:
    """A line inside its enclosing function (whole when it fits), or its neighbours at module level."""
    span = enclosing_function(spans, line)
    if span is None:
        return set(range(line - NEIGHBOUR_LINES, line + NEIGHBOUR_LINES + 1))
    return _function_lines(span.start, span.end, [line, *ranked])


def symbol_slice(path: str, symbol: str, around: Sequence[int], read_file: ReadFile) -> dict[str, set[int]]:
    """Lines of ``symbol`` in ``path`` (a window around ``around`` when it is long or not found)."""
    try:
        text = read_file(path)
    except OSError:
        return {}
    for span in _with_decorators(function_spans(path, text), _parse(text)):
        if span.name == symbol or span.name.endswith("." + symbol):
            return {path: _function_lines(span.start, span.end, list(around))}
    tree = _parse(text)
    lines = _class_outline(tree, symbol) if tree is not None else set()
    for line in around:
        lines |= set(range(line - NEIGHBOUR_LINES * 2, line + NEIGHBOUR_LINES * 2 + 1))
    return {path: lines}


def locations_slice(locations: Sequence[Location], read_file: ReadFile) -> dict[str, set[int]]:
    """The current code of every place a hypothesis names, each file with its imports and constants (is the
    helper the fix needs imported?)."""
    wanted: dict[str, set[int]] = {}
    for location in locations:
        for path, lines in symbol_slice(location.file, location.symbol, location.lines, read_file).items():
            wanted.setdefault(path, set()).update(lines)
    for path, lines in wanted.items():
        try:
            text = read_file(path)
        except (OSError, UnicodeDecodeError):
            continue
        lines |= _outline(path, text, None if is_node_file(path) else _parse(text))
    return wanted


def frames_slice(text: str, read_file: ReadFile, skip: dict[str, set[int]]) -> dict[str, set[int]]:
    """The functions of the project source lines a test output names (``path.py:12``), except those in ``skip``:
    what a failed attempt's traceback implicates beside the hypothesis' own places."""
    known = _known(read_file)
    wanted: dict[str, set[int]] = {}
    for match in FILE_LINE.finditer(text):
        path, line = match.group(1), int(match.group(2))
        if line in skip.get(path, set()) or not known(path):
            continue
        text = read_file(path)
        spans = _with_decorators(function_spans(path, text), _parse(text))
        wanted.setdefault(path, set()).update(_around(spans, line, [line]))
        if len(wanted) >= MAX_FRAMES_PER_FAILURE:
            break
    return wanted


FILE_LINE = re.compile(r"([\w./-]+\.(?:py|[cm]?[jt]sx?))\W{1,2}(\d+)")


def test_slices(evidence: Evidence, read_file: ReadFile) -> dict[str, set[int]]:
    """The failing test functions with what they use: their module's imports, their class's header, setup
    methods and attributes, the fixtures they ask for (from the test module or a conftest.py on its path) and
    the module's own helper functions they call; so QA tests can import and set up the same way."""
    wanted: dict[str, set[int]] = _node_test_slices(evidence, read_file)
    for path, tree, node, owner in _failing_test_nodes(evidence, read_file):
        lines = wanted.setdefault(path, set())
        lines |= _module_outline(tree)
        lines |= _node_lines(node, MAX_TEST_LINES)
        if owner is not None:
            lines |= _class_outline(tree, owner.name)
            for stmt in owner.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    stmt.name in SETUP_METHODS or _is_fixture(stmt)
                ):
                    lines |= _node_lines(stmt, MAX_TEST_LINES)
        for helper_path, helper_lines in used_helpers(node, tree, path, read_file).items():
            if helper_path not in wanted:
                wanted[helper_path] = _module_outline(_parse(read_file(helper_path)))
            wanted[helper_path] |= helper_lines
        helpers = {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        fixtures = {a.arg for a in node.args.args} - {"self", "cls"}
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and (
                stmt.name in helpers or (stmt.name in fixtures and _is_fixture(stmt))
            ):
                lines |= _node_lines(stmt, MAX_TEST_LINES)
                fixtures.discard(stmt.name)
        for conftest in _conftests(path):
            if not fixtures:
                break
            try:
                conf_tree = _parse(read_file(conftest))
            except (OSError, UnicodeDecodeError):
                continue
            for stmt in conf_tree.body if conf_tree is not None else []:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in fixtures:
                    conf_lines = wanted.setdefault(conftest, set())
                    conf_lines |= _module_outline(conf_tree)
                    conf_lines |= _node_lines(stmt, MAX_TEST_LINES)
                    fixtures.discard(stmt.name)
    return wanted


def stack_test_files(failure: TestResult) -> list[str]:
    """The test files a failure's stack passes through, innermost first: where a JavaScript suite's entry file
    (Hexo's ``test/index.js``) requires the file that defines the test, that file."""
    return list(dict.fromkeys(f.file for f in reversed(failure.frames) if is_test_path(f.file)))


def _node_test_slices(evidence: Evidence, read_file: ReadFile) -> dict[str, set[int]]:
    """A JavaScript project's failing tests: each test's call (``it``/``test``), the setup hooks of the describe
    blocks around it and the spec file's imports."""
    wanted: dict[str, set[int]] = {}
    failures = {failure.nodeid: failure for failure in evidence.failures}
    for nodeid in [n for n in evidence.f2p_tests if is_node_file(n.partition("::")[0])][:MAX_TEST_FUNCTIONS]:
        spec, _, rest = nodeid.partition("::")
        titles = tuple(rest.split(TITLE_JOIN)) if rest else ()
        # The spec file mocha loaded, then the test files of the failure's stack: a suite whose entry file
        # requires the others (Hexo's test/index.js) defines the test in one of those.
        # A failure whose stack names no test file (an assertion library's error) leaves the files the spec
        # loads, followed from it by their relative requires.
        failure = failures.get(nodeid)
        places = [spec, *(stack_test_files(failure) if failure is not None else [])]
        if not _first_defining(places, titles, read_file, wanted):
            _first_defining(_loaded_test_files(spec, read_file), titles, read_file, wanted)
    return wanted


MAX_LOADED_TEST_FILES = 80  # test files followed from a spec file's requires when looking for a test's title


def _first_defining(
    places: Sequence[str], titles: tuple[str, ...], read_file: ReadFile, wanted: dict[str, set[int]]
) -> bool:
    """Add the lines of the first of ``places`` that defines the test ``titles`` names to ``wanted``."""
    for path in dict.fromkeys(p for p in places if is_node_file(p)):
        try:
            text = read_file(path)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        lines = node_test_lines(path, text, titles, MAX_TEST_LINES)
        if lines:
            wanted.setdefault(path, node_outline(path, text, MAX_MODULE_LINES)).update(lines)
            return True
    return False


def _loaded_test_files(spec: str, read_file: ReadFile) -> list[str]:
    """The test files ``spec`` loads by relative requires, and those they load in turn, breadth first (Hexo's
    ``test/index.js`` requires ``./scripts/helpers``, whose index requires ``./is``), at most
    ``MAX_LOADED_TEST_FILES``; the project's own modules (outside the test folders) are not followed."""
    seen: list[str] = []
    queue = [spec]
    while queue and len(seen) < MAX_LOADED_TEST_FILES:
        path = queue.pop(0)
        try:
            text = read_file(path)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        for module in node_relative_imports(path, text):
            for candidate in (module + suffix for suffix in NODE_MODULE_SUFFIXES):
                if candidate in seen or candidate == spec or not is_test_path(candidate):
                    continue
                try:
                    read_file(candidate)
                except (OSError, UnicodeDecodeError, ValueError):
                    continue
                seen.append(candidate)
                queue.append(candidate)
                break
    return seen


SETUP_METHODS = frozenset(
    {"setUp", "setUpClass", "asyncSetUp", "setup_method", "setup_class", "setup", "get_app", "setUpTestData"}
)


def _find_test(
    tree: ast.Module, parts: Sequence[str]
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None] | None:
    """The test function a node id names (``Class::test`` or ``test``), and its class; a test a class inherits
    from a base class of the same module is found there."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    name = parts[-1]
    if len(parts) == 1:
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return stmt, None
        return None
    queue = [classes.get(parts[-2])]
    while queue:
        owner = queue.pop(0)
        if owner is None:
            continue
        for stmt in owner.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return stmt, owner
        queue += [classes.get(b.id) for b in owner.bases if isinstance(b, ast.Name)]
    return None


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


def _node_lines(node: ast.stmt, limit: int) -> set[int]:
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    last = min(node.end_lineno or node.lineno, first + limit - 1)
    return set(range(first, last + 1))


def _conftests(test_path: str) -> list[str]:
    """The conftest.py files whose fixtures a test module sees, nearest first."""
    parts = test_path.split("/")[:-1]
    return [("/".join(parts[:n]) + "/conftest.py").lstrip("/") for n in range(len(parts), -1, -1)]


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
        # A gap of one line costs what its "..." marker costs: show the line instead.
        shown = sorted({*shown, *(n + 1 for n, m in itertools.pairwise(shown) if m == n + 2)})
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


def _function_lines(start: int, end: int, ranked: Sequence[int]) -> set[int]:
    """A function whole when it fits, else its signature and a window around each of its ``ranked`` lines,
    highest ranked first (never the first few by position: the top line must be in view)."""
    if end - start + 1 <= MAX_FUNCTION_LINES:
        return set(range(start, end + 1))
    lines = set(range(start, start + 3))  # the signature
    inside = list(dict.fromkeys(line for line in ranked if start <= line <= end)) or [start]
    for line in inside[:MAX_WINDOWS]:
        lines |= set(range(max(start, line - WINDOW), min(end, line + WINDOW) + 1))
    return lines


def _outline(path: str, text: str, tree: ast.Module | None) -> set[int]:
    """A module's imports and constants, read with its language's parser."""
    if is_node_file(path):
        return node_outline(path, text, MAX_MODULE_LINES)
    return _module_outline(tree)


def _module_outline(tree: ast.Module | None) -> set[int]:
    """The module's imports whole (``import_lines``: multi-line and guarded ones too), then its module-level
    assignments (not the docstring) in what is left of ``MAX_MODULE_LINES`` lines (``MIN_CONSTANT_LINES`` at
    least); a constant too long for what is left is skipped, not the rest."""
    lines = import_lines(tree)
    if tree is None:
        return lines
    budget = len(lines) + max(MIN_CONSTANT_LINES, MAX_MODULE_LINES - len(lines))
    constants = [n for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)]
    for node in constants:
        span = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if len(lines | span) <= budget:
            lines |= span
    return lines


def _definitions_index(tree: ast.Module) -> set[int]:
    """The first line of every top-level definition: what a module offers, for an error naming it."""
    return {n.lineno for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}


def _class_outline(tree: ast.Module, qualified: str) -> set[int]:
    """The class's header and its class-level statements (attributes), not its other methods."""
    node = find_class(tree, qualified)
    if node is None:
        return set()
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
propose. When the same root cause needs changes in more than one place (a function and its caller, a
definition and where it is used), name the first place as the hypothesis' location and the others in
"also". Confidence is your probability that the hypothesis is the root cause.{ask_offer(asks_left)}"""


def describe_location(location: Location) -> str:
    lines = f"{location.lines[0]}-{location.lines[-1]}" if location.lines else "?"
    return f"{location.file} {location.symbol} (lines {lines})"


def describe_hypothesis(hypothesis: Hypothesis) -> str:
    also = "".join(f"\n  also: {describe_location(place)}" for place in hypothesis.also)
    return (
        f"{hypothesis.id}: {hypothesis.title}\n"
        f"  location: {describe_location(hypothesis.locations()[0])}, "
        f"confidence {hypothesis.confidence:.2f}{also}\n"
        f"  reasoning: {hypothesis.reasoning}\n"
        f"  proposed fix: {hypothesis.proposed_fix}"
    )


def qa_environment(evidence: Evidence, read_file: ReadFile | None = None) -> str:
    """What a reproduction test can use, as pytest reported it on the baseline run: fixtures by origin, plugins;
    with ``read_file``, the project's test helpers the failing tests import (``test_helper_imports``)."""
    by_origin: dict[str, list[str]] = {}
    for name, origin in evidence.root_fixtures:
        by_origin.setdefault(origin, []).append(name)
    out = ""
    if by_origin or evidence.pytest_plugins:
        parts = [f"{origin}: {', '.join(sorted(names)[:40])}" for origin, names in sorted(by_origin.items())]
        if evidence.pytest_plugins:
            parts.append(f"installed pytest plugins: {', '.join(evidence.pytest_plugins[:40])}")
        out = "Fixtures a test there can ask for by name (and where each comes from) and plugins:\n" + block(
            "pytest fixtures and plugins", "\n".join(parts), limit=2500
        )
    files = list(dict.fromkeys(nodeid.partition("::")[0] for nodeid in evidence.f2p_tests))
    helpers = test_helper_imports(files, read_file) if read_file is not None else []
    if helpers:
        out += (
            ("\n" if out else "")
            + "It may import the project's own test helpers as the failing tests do (absolute imports; never a "
            "test module or conftest.py):\n"
            + block("test helper imports", "\n".join(helpers[:MAX_HELPER_IMPORTS]), code=True, limit=2500)
        )
    return out


def qa_retry(feedback: str = "", disputed: str = "") -> str:
    """Why QA is asked again for a hypothesis (the paragraph ending its request): its previous test was broken
    (``feedback``: it failed in its own code, or could not be collected), or it is disputed (``disputed``: it
    failed on candidate patches that pass every failing test). Both carry untrusted test output."""
    if disputed:
        return (
            "\n\nYour previous reproduction test for this hypothesis failed on candidate patches that make every "
            "failing test of the project pass. Either those patches are incomplete, or the test asserts something "
            "the fix does not make true (a value the fix does not produce, or state left over from one of its "
            "tests reaching the next). Read it again and write the test the hypothesis calls for: corrected if it "
            "was wrong, the same if it was right. It must still fail on the current code.\n"
            + block("the previous test and its failure on a candidate", disputed, limit=5000)
        )
    if feedback:
        return (
            "\n\nYour previous reproduction test for this hypothesis did not run as a test: it failed in its own "
            "code, not in the project's. Write a corrected one.\n" + block("QA test output", feedback, limit=2500)
        )
    return ""


def qa_request(hypothesis: Hypothesis, path: str, retry: str = "", environment: str = "") -> str:
    """The QA request; ``retry`` (``qa_retry``) says why QA is asked again for this hypothesis; ``environment``
    what the test may use (``qa_environment``)."""
    uses = f"\n{environment}" if environment else ""
    return f"""\
Role: QA.
Hypothesis under test:
{describe_hypothesis(hypothesis)}

Write a small pytest module (it is saved as _selfix_qa/{path} and run from the repository root, with
the project importable exactly as the failing tests import it) that reproduces THIS hypothesis. It must
FAIL on the current code with an AssertionError (or the exception the hypothesis predicts), and PASS once
the hypothesized fix is applied. It must not fail because of an import error, a typo or a missing
fixture. Prefer the project's own objects to fakes: a stand-in class you write must have everything the
project's code calls on it, or the test fails on the fixed code too. Use one or two test functions, plain
asserts, no network, no files outside a tmp_path; import the project as the failing tests do, and of the test
package only the helper modules listed below, if any; never import conftest.py or a test module (ask for
conftest fixtures by name instead, those listed below only: fixtures of a conftest.py in a test folder are not
visible there). How the module is judged: on the current code it reproduces the hypothesis when at least one
of its test functions fails with an AssertionError or an exception raised in the project's code (others may
pass); it is a broken test when a stand-in class it defines lacks what the project calls (in any function),
or when its functions fail only in their own code (import, name or syntax errors). Once the fix is applied,
EVERY test function in the module must pass, so assert nothing the fix does not make true. If the hypothesis
is wrong, an honest test passes on the current code: that is how we rule it out.{uses}

When the hypothesis' claim is about a class of inputs (every string, every tuple, every non-empty list, every
negative number...), also give property_source: a separate pytest module using the Hypothesis library
(`from hypothesis import given, strategies as st`) with one @given test stating what must hold for every input
of that shape. It must find a counterexample on the current code and hold once the whole class is fixed, not
only the example above: draw the inputs from the whole class the hypothesis names (e.g. st.one_of over the
sibling types), never only the failing example. selfix runs it with its own bounded, reproducible settings: no
@settings raising max_examples, no network, no files outside tmp_path or tempfile. Leave property_source empty
when the claim is about one input only.{retry}"""


def qa_file(evidence: Evidence, stem: str) -> str:
    """Where a reproduction test is saved, under ``_selfix_qa/``: a pytest module for a Python project; for a
    JavaScript one, a spec file beside the first failing test's (its relative imports then read the same),
    named the way the runners find tests."""
    spec = next((n.partition("::")[0] for n in evidence.f2p_tests if is_node_file(n.partition("::")[0])), "")
    if not evidence.toolchain or not spec:
        return f"{stem}.py"
    folder, _, name = spec.rpartition("/")
    suffix = "." + name.rsplit(".", 1)[-1]
    return f"{folder + '/' if folder else ''}{stem.replace('_', '-')}.test{suffix}"


def node_qa_request(hypothesis: Hypothesis, path: str, evidence: Evidence, retry: str = "") -> str:
    """The QA request for a JavaScript/TypeScript project: a spec file for the project's own runner; ``retry``
    (``qa_retry``) says why QA is asked again."""
    spec = next((n.partition("::")[0] for n in evidence.f2p_tests), "")
    return f"""\
Role: QA.
Hypothesis under test:
{describe_hypothesis(hypothesis)}

Write a small test file for the project's own test runner ({inline(evidence.toolchain, 80)}). It is saved as
{inline(path)}, in the same folder as the failing test {inline(spec)}, and run by that runner alone: import or
require the project's modules with the same relative paths and module style as that file, and use the same
test functions (describe/it or test) and assertion library it uses (shown above). It must FAIL on the current
code with an assertion failure (or the error the hypothesis predicts), and PASS once the hypothesized fix is
applied. It must not fail because of a missing module, a typo or a ReferenceError in its own code. Prefer the
project's own objects to fakes. Use one or two tests, no network, no files outside the OS temp folder, no
global state left behind. How it is judged: on the current code it reproduces the hypothesis when at least one
of its tests fails with an assertion error or an error thrown in the project's code; it is a broken test when it
fails only in its own code (a missing module, a ReferenceError, a syntax error). Once the fix is applied, EVERY
test in it must pass, so assert nothing the fix does not make true. If the hypothesis is wrong, an honest test
passes on the current code: that is how we rule it out. Leave property_source empty: property tests are run
for Python projects only.{retry}"""


def patcher_request(
    hypothesis: Hypothesis,
    code: str,
    attempts: Sequence[str],
    implicated: str = "",
    correction: str = "",
    asks_left: int = 0,
) -> str:
    """The Patcher's request: the hypothesis, what its reproduction test showed, the current code of every place
    it names, the earlier attempts with their failing output and the code that output implicates."""
    reproduction = ""
    if hypothesis.reproduction:
        reproduction = "\n\nIts reproduction test, run on the current code:\n" + block(
            "QA test result", hypothesis.reproduction, limit=REPRODUCTION_LIMIT
        )
    places = "that location" if not hypothesis.also else f"the {len(hypothesis.locations())} places it names"
    previous = ""
    if attempts:
        previous = "\n\nEarlier attempts for this hypothesis, and why they failed (do not repeat them):\n" + "\n".join(
            f"- attempt {n}: {text}" for n, text in enumerate(attempts, 1)
        )
    if implicated:
        previous += "\n\nCode the last attempt's failing output points at:\n" + implicated
    return f"""\
Role: Patcher.
Fix the bug described by this hypothesis:
{describe_hypothesis(hypothesis)}{reproduction}

Current code at {places} (unpatched: every attempt starts from it):
{code}{previous}

Return the smallest search/replace edits that fix it. Each search text is copied verbatim from the current
file (indentation included, line numbers excluded) and must match exactly one place in that file; include a
few surrounding lines if needed. Edit only the project's source files. Never edit tests, conftest.py,
configuration or CI files.{ask_offer(asks_left)}{correction}"""


# What the Patcher reads of the hypothesis' reproduction test: its outcome on the unpatched code and its source.
REPRODUCTION_LIMIT = 3000

# What the second Patcher is asked besides the first's request (issue 33): a capable model given the same request
# writes the same program (on the benchmark's 42 bugs, the same one in most heals), which tells nothing; the
# question that separates a complete fix from a partial one is "does it fix every input the root cause reaches?".
SECOND_PATCHER_FOCUS = """

Another engineer is fixing this bug from the same hypothesis; you will not see their patch. Write your own fix
from the root cause, not from the failing example: it must be right for every input the root cause reaches (the
failing input's siblings: other types of the same thing such as a tuple or a generator where a list or a string
came, empty and None values, the other callers of the code you change, the other branches with the same
flaw), not only the input the failing tests use. The proposed fix in the hypothesis is one engineer's idea;
follow it only where it is complete."""


def second_patcher_request(hypothesis: Hypothesis, code: str, asks_left: int = 0) -> str:
    """The second, independent Patcher's request: the first's (the hypothesis and the code, no attempt), asked
    for a fix of the whole class of inputs the root cause reaches."""
    return patcher_request(hypothesis, code, (), asks_left=asks_left) + SECOND_PATCHER_FOCUS


def broaden_request(hypothesis: Hypothesis, code: str, diff: str, review: Review, asks_left: int = 0) -> str:
    """The Patcher's request once the Reviewer called a confirmed patch partial or wrong: the first request (no
    attempt), the patch, and the reviewer's reason and missed case; one whole patch from the unpatched code is
    asked for, one that keeps what the patch got right and fixes that case too."""
    return (
        patcher_request(hypothesis, code, (), asks_left=asks_left)
        + f"""

A patch for this hypothesis passed the failing tests, its reproduction test and the whole suite:
{block("confirmed patch", diff, code=True, limit=6000)}
A reviewer who did not write it judged it {review.verdict}: {inline(review.reason, 800)}
A case the reviewer says it still gets wrong: {inline(review.missed, 600)}

Check that case against the code. If the reviewer is right, fix the root cause for that case and its siblings
as well, keeping what the patch gets right; if the reviewer is wrong, return the patch's own edits. Your edits
apply to the unpatched code shown above, not to the patched one: give the whole patch you propose."""
    )


def describe_failure(verdict: Verification) -> str:
    detail = verdict.detail or ", ".join(verdict.failing_tests[:3])
    return f"verification failed at {verdict.stage.value}:\n" + block("verification output", detail, limit=1500)


def corrective_request(problem: str) -> str:
    return f"Your previous answer could not be used: {problem}\nAnswer again, corrected and complete."


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
        "case-sensitive). The answers come back, then you give your answer. A source file not shown can be named "
        "or edited once an ask has shown it."
    )


# -- the reviewer -----------------------------------------------------------------------------------------
def reviewer_context(request: ReviewRequest) -> str:
    """What the Reviewer reads before its question: the failing tests as the evidence has them, the code the
    patch edits, whole, as the patch leaves it, and how an edited method's class builds its objects. Its own
    context, not the other roles' shared one."""
    out = ["## The failing tests the patch was made for"]
    for failure in request.failures[:MAX_FAILURES]:
        out.append(f"- {inline(failure.nodeid)}: {failure.status.value} {inline(failure.exc_type, 100)}".rstrip())
        output = _clip(failure.message).splitlines()
        if failure.frames:
            output.append("traceback (project frames, outermost first):")
            output += [f"  {f.file}:{f.line} in {f.function}: {f.code.strip()}" for f in failure.frames[-6:]]
        if output:
            out.append(block("test output", "\n".join(output)))
    if len(request.failures) > MAX_FAILURES:
        out.append(f"- ... and {len(request.failures) - MAX_FAILURES} more failing test(s)")
    out.append("\n## The edited code, as the patch leaves it")
    out += [_reviewed(code) for code in request.code if code.edited]
    builders = [_reviewed(code) for code in request.code if not code.edited]
    if builders:
        out += ["\n## How the edited methods' classes build an object (not edited by the patch)", *builders]
    return "\n".join(out)


def _reviewed(code: ReviewedCode) -> str:
    lines = code.source.splitlines()
    where = f"{code.symbol} (lines {code.start}-{code.start + len(lines) - 1})" if code.symbol else "module level"
    numbered = "\n".join(f"{code.start + n:>5} | {line}" for n, line in enumerate(lines))
    return f"### {inline(code.file)}: {inline(where)}\n" + block(f"file {code.file}", numbered, code=True)


def reviewer_request(request: ReviewRequest) -> str:
    """The Reviewer's question: the hypothesis, the patch, what changed beyond the tests (when measured)."""
    behaviour = ""
    if request.behaviour.strip():
        behaviour = "\n\nInputs whose outcome the patch changed, old -> new:\n" + block(
            "behaviour table", request.behaviour, limit=3000
        )
    return f"""\
Role: Reviewer.
This patch passed the failing tests and the whole test suite. It was made for this hypothesis:
{describe_hypothesis(request.hypothesis)}

The patch:
{block("patch diff", request.diff, code=True, limit=6000)}{behaviour}

Passing the tests is not being right. Judge whether the patch fixes the root cause completely: complete (every
input of the kind the failure shows now behaves correctly), partial (the reported case is fixed but a sibling case
of the same bug, another type, value or path, still fails, or a second place the fix needs, such as how the
object is built, is left as it was) or wrong (it does not fix the root cause, or it breaks correct behaviour).
Check it on the inputs the code is meant to handle, not only the test's: the edited function's other branches,
the values its callers pass, inputs just beside the reported one. For partial or wrong, name a concrete input or
case the patched code still gets wrong. Judge from the code shown; do not propose a new patch."""


def settle_request(
    hypothesis: Hypothesis, path: str, disagreements: str, environment: str = "", evidence: Evidence | None = None
) -> str:
    """QA, settling a disagreement: two patches passed every check and behave differently on some inputs; a test
    of what the right code does on them, from the hypothesis, tells which one is the fix. A JavaScript project's
    test is a spec file for its own runner, beside the failing test."""
    uses = f"\n{environment}" if environment else ""
    if evidence is not None and evidence.toolchain:
        spec = next((n.partition("::")[0] for n in evidence.f2p_tests), "")
        how = (
            f"Write a small test file for the project's own test runner ({inline(evidence.toolchain, 80)}), saved as "
            f"{inline(path)} in the same folder as the failing test {inline(spec)}: require or import the project's "
            "modules with the same relative paths, module style, test functions and assertion library as that file. "
            "Its tests call the edited function on those inputs (build them as the row shows; for a method, build "
            "the object as the failing tests do) and assert the correct outcome. It must pass on the patch that is "
            "right and fail on the other; if neither is right on an input, assert what is. No network, no files "
            "outside the OS temp folder."
        )
    else:
        how = (
            "Write a small pytest module (saved as\n"
            f"_selfix_qa/{path}, run from the repository root, the project importable as the failing tests import "
            "it) whose\ntest functions call the edited function on those inputs (build them as the row shows; for a "
            "method, build the\nobject as the failing tests do) and assert the correct outcome. It must pass on the "
            "patch that is right and\nfail on the other; if neither is right on an input, assert what is. Use plain "
            "asserts or pytest.raises, no\nnetwork, no files outside a tmp_path."
        )
    return f"""\
Role: QA, settling a disagreement.
Hypothesis:
{describe_hypothesis(hypothesis)}

Two patches for this hypothesis pass the failing tests, the passing tests and the reproduction test, yet they
behave differently on inputs no test tried. Each row is a call of an edited function (its arguments as text),
what the first patch does and what the second does:

{disagreements}

Decide, from the hypothesis and the code alone, what the correct code does on these inputs: the behaviour the
hypothesis' fix calls for, for the whole class of inputs it names. {how} In expected_failure, say which patch
you expect to fail it and why.{uses}"""


def reproducer_context(request: ReproductionRequest) -> str:
    """The reproducer's own context (a role of its own: no failing test, no localization yet): the reported error
    with the project's frames and code, and how the project's tests import it."""
    imports = (
        "\nHow a test module beside it imports the project (use the same style):\n"
        + block("test imports", request.test_imports, code=True, limit=2500)
        if request.test_imports
        else ""
    )
    return (
        "A production error was reported for this project. No test reproduces it yet.\n"
        + block("reported error", request.error, limit=12000)
        + imports
    )


def reproducer_request(request: ReproductionRequest, feedback: str = "") -> str:
    """QA, from a reported error: a new test module that fails with that error on the current code; ``feedback``
    says what its previous test did instead (untrusted test output)."""
    again = (
        "\n\nYour previous test did not reproduce the error. What it did:\n"
        + block("previous attempt", feedback, limit=3000)
        + "\nWrite a corrected module."
        if feedback
        else ""
    )
    site = request.site
    return f"""\
Role: QA.
Write a pytest module saved as {inline(request.test_path)}: a new file among the project's tests, run by pytest from
the repository root with the project importable exactly as its other tests import it. It reproduces THE REPORTED
ERROR: on the current code at least one of its test functions must fail because {inline(request.exc_type, 200)} is
raised in {inline(site.file)}, function {inline(site.function, 200)} (that must be the innermost frame of the
project's code in the test's traceback), and every test function that fails must fail that way. How it is judged:
the traceback of the test run itself, not its text.

Call the project's code the way the stack shows production called it, with the inputs the stack, the code and the
message point to (the class to build, its constructor and abstract members are shown when the raising code is a
method). Let the reported exception escape: never catch it (no pytest.raises of it, no try/except around the
call), never raise it yourself, never stub or mock the function that raises it. After the call assert only what
must hold once the bug is fixed (often nothing beyond the call returning); if the fixed code should instead raise
a different error of the project's for this input, you may expect that one with pytest.raises(ThatError), which
lets the reported exception through on the current code. The module is added to the project with the fix, and
every test in it must pass then. One or two test functions, plain asserts, no network, no files outside tmp_path; import
the project as its tests do; never import conftest.py or a test module.{again}

Answer with test_source (the whole module) and an empty property_source."""
