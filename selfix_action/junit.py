"""Read JUnit/xUnit XML reports into plain, tool-independent test results.

Reports come from CI artifacts we do not control, so every file goes through ``defusedxml`` with DTDs,
entity declarations and external references refused, a size cap, and a nesting-depth cap. junitparser
builds the report object model on top of that safe parse (``JUnitXml.fromfile(..., parse_func=...)``).

Shapes handled: pytest (``xunit1`` with ``file``/``line`` attributes, ``xunit2`` without),
unittest-xml-reporting, jest-junit, vitest, mocha's xunit and mocha-junit-reporter (its ``file`` on the suite),
node's test runner (describe blocks as nested suites, top-level tests right under ``<testsuites>``), Maven
Surefire (``TEST-*.xml`` with a ``<testsuite>`` root, including ``<flakyFailure>``/``<rerunFailure>``),
go-junit-report, ``<testsuite>`` nested in ``<testsuite>``, and a bare ``<testsuite>`` root.

Conventions:

* Outcome precedence within one test case: error > failure > skipped > passed.
* ``text`` joins the bodies of all ``<failure>``/``<error>`` children; skipped bodies and
  ``<system-out>``/``<system-err>`` are not included.
* Every run a file records is kept. Test cases repeated in the same ``<testsuite>`` with the same classname,
  name and file are one result with one entry in ``runs`` per ``<testcase>`` element: pytest writes two for a
  test that fails and then also errors in teardown, ``go test -count=N``, mocha retries and parametrized suites
  repeat names. Surefire's ``<flakyFailure>``/``<flakyError>`` (a failed attempt before a pass) and
  ``<rerunFailure>``/``<rerunError>`` (a failed rerun) are runs too. Durations are summed.
* A case that failed in any run counts as failing (the worst outcome wins), and as ``flaky`` if it also passed,
  so a failing run never hides behind a passing one. Counts over ``runs`` match what the file says.
* A ``<testcase>`` without a name is never merged with another: each one is counted (it has no node id).
* ``line`` is the attribute as written. Note pytest writes a 0-based line number (its ``location``), other
  tools (unittest-xml-reporting) write 1-based ones.
"""

from __future__ import annotations

import glob
import itertools
import math
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import IO, ClassVar, NamedTuple, cast
from xml.etree.ElementTree import Element, ElementTree, ParseError, TreeBuilder

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser
from defusedxml.ElementTree import parse as defused_parse
from junitparser import Attr, Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestSuite
from junitparser import TestCase as _JPTestCase
from junitparser.junitparser import FinalResult
from pydantic import BaseModel, computed_field

from selfix_action.errors import InputError, JUnitError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "JUnitReport",
    "Outcome",
    "ReportError",
    "TestCaseResult",
    "parse_report",
    "parse_reports",
    "pytest_nodeid",
]

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_DEPTH = 100

REFUSED_HOSTILE = "refused: XML entities/DTD are not allowed"

# expat error code for "no element found" (the document has no root element at all).
_XML_ERROR_NO_ELEMENTS = 3


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


class TestCaseResult(BaseModel, frozen=True):
    """One test case from one report file."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    report: str
    classname: str
    name: str
    file: str | None
    line: int | None
    nodeid: str | None
    outcome: Outcome
    duration: float | None
    message: str
    text: str
    runs: tuple[Outcome, ...] = ()  # one outcome per run the file records, in file order
    # The names of the <testsuite> elements around the case, outermost first: node's test runner writes a
    # describe block as a nested <testsuite> and nothing of it in the case itself.
    suites: tuple[str, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def flaky(self) -> bool:
        """Failed (or errored) in one run and passed in another."""
        failed = any(run in (Outcome.FAILED, Outcome.ERROR) for run in self.runs)
        return failed and Outcome.PASSED in self.runs


class ReportError(BaseModel, frozen=True):
    path: str
    reason: str


class JUnitReport(BaseModel, frozen=True):
    cases: list[TestCaseResult]
    errors: list[ReportError]


# --------------------------------------------------------------------------------------------------------
# Safe parsing


class _TooDeep(Exception):
    pass


class _TooBig(Exception):
    pass


class _DepthLimitedTreeBuilder(TreeBuilder):
    """A tree builder that refuses documents nested deeper than ``max_depth`` elements.

    The check runs as elements open, so a hostile file is refused before the deep tree is ever built.
    """

    def __init__(self, max_depth: int) -> None:
        super().__init__()
        self._depth = 0
        self._max_depth = max_depth
        self.seen_element = False

    def start(self, tag: str, attrs: dict[str, str]) -> Element:
        self.seen_element = True
        self._depth += 1
        if self._depth > self._max_depth:
            raise _TooDeep
        return super().start(tag, attrs)

    def end(self, tag: str) -> Element:
        self._depth -= 1
        return super().end(tag)


class _LimitedReader:
    """Binary reader that fails once more than ``limit`` bytes were read (the file grew after stat)."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw = raw
        self._left = limit

    def read(self, size: int = -1) -> bytes:
        want = self._left + 1 if size is None or size < 0 else min(size, self._left + 1)
        data = self._raw.read(want)
        self._left -= len(data)
        if self._left < 0:
            raise _TooBig
        return data


class _SafeParser:
    """The ``parse_func`` given to junitparser; remembers the tree so the root tag can be reported."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.builder = _DepthLimitedTreeBuilder(max_depth)
        self.tree: ElementTree | None = None

    def __call__(self, source: IO[bytes]) -> ElementTree:
        parser = DefusedXMLParser(
            target=self.builder,
            forbid_dtd=True,
            forbid_entities=True,
            forbid_external=True,
        )
        self.tree = defused_parse(source, parser=parser)
        return self.tree


class _Case(_JPTestCase):
    """junitparser's test case plus the ``file``/``line`` attributes pytest and xmlrunner write."""

    file = Attr()
    line = Attr()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fail(path: str, reason: str) -> JUnitError:
    return JUnitError(path, _one_line(reason))


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, PermissionError):
        return "cannot read: permission denied"
    return f"cannot read: {exc.strerror or exc}"


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB"


def _load(path: str, max_bytes: int, max_depth: int) -> JUnitXml:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _fail(path, _os_reason(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise _fail(path, "is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise _fail(path, "not a regular file")
    if st.st_size > max_bytes:
        raise _fail(path, f"refused: file is larger than {_mib(max_bytes)} ({st.st_size} bytes)")
    if st.st_size == 0:
        raise _fail(path, "empty file")

    parse_func = _SafeParser(max_depth)
    try:
        with open(path, "rb") as fh:
            # Only read() is called on it, by junitparser's parse_func and the XML parser.
            limited = cast(IO[bytes], _LimitedReader(fh, max_bytes))
            return JUnitXml.fromfile(limited, parse_func=parse_func)
    except OSError as exc:
        raise _fail(path, _os_reason(exc)) from None
    except _TooBig:
        raise _fail(path, f"refused: file is larger than {_mib(max_bytes)}") from None
    except _TooDeep:
        raise _fail(path, f"refused: XML nesting deeper than {max_depth} levels") from None
    except DefusedXmlException:
        raise _fail(path, REFUSED_HOSTILE) from None
    except ParseError as exc:
        if getattr(exc, "code", None) == _XML_ERROR_NO_ELEMENTS:
            if not parse_func.builder.seen_element:
                raise _fail(path, "empty report: no XML element found") from None
            line, column = getattr(exc, "position", ("?", "?"))
            raise _fail(
                path, f"malformed XML: truncated, file ends inside an element (line {line}, column {column})"
            ) from None
        raise _fail(path, f"malformed XML: {exc}") from None
    except JUnitXmlError:
        root = parse_func.tree.getroot() if parse_func.tree is not None else None
        tag = root.tag if root is not None else "?"
        raise _fail(path, f"not a JUnit report: root element is <{tag}>, not <testsuites> or <testsuite>") from None
    except (ValueError, LookupError) as exc:  # e.g. an unknown encoding declared in the XML prolog
        raise _fail(path, f"malformed XML: {exc}") from None


# --------------------------------------------------------------------------------------------------------
# Test cases


class _Where(NamedTuple):
    """Where a case sits: its suite's id (cases merge only within one suite), the suites' names outermost first,
    and the nearest suite's ``file`` attribute (mocha-junit-reporter puts the test file there, not on the case)."""

    suite_id: int
    suites: tuple[str, ...]
    file: str | None


def _walk_suite(suite: TestSuite, counter: Iterator[int], outer: _Where) -> Iterator[tuple[_Where, _Case]]:
    where = _Where(next(counter), (*outer.suites, suite.name or ""), suite._elem.get("file") or outer.file)
    for case in suite.iterchildren(_Case):
        yield where, case
    for inner in suite.iterchildren(TestSuite):
        yield from _walk_suite(inner, counter, where)


def _walk(xml: JUnitXml, counter: Iterator[int]) -> Iterator[tuple[_Where, _Case]]:
    top = _Where(next(counter), (), None)
    for case in xml.iterchildren(_Case):  # node's test runner writes a top-level test() right under <testsuites>
        yield top, case
    for suite in xml.iterchildren(TestSuite):
        yield from _walk_suite(suite, counter, top)
    for inner in xml.iterchildren(JUnitXml):  # <testsuites> inside <testsuites>: rare but seen
        yield from _walk(inner, counter)


def _duration(case: _Case) -> float | None:
    try:
        value = case.time
    except (TypeError, ValueError):
        return None
    if value is None or not math.isfinite(value):
        return None
    return value


def _line(case: _Case) -> int | None:
    raw = case.line
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        return None


def _text(result: FinalResult) -> str:
    return (result.text or "").strip("\r\n")


_PRECEDENCE: tuple[tuple[Outcome, type[FinalResult]], ...] = (
    (Outcome.ERROR, Error),
    (Outcome.FAILED, Failure),
    (Outcome.SKIPPED, Skipped),
)


# Surefire's extra attempts inside one <testcase>: each is a run that failed (or errored).
_ATTEMPT_TAGS: dict[str, Outcome] = {
    "flakyFailure": Outcome.FAILED,
    "flakyError": Outcome.ERROR,
    "rerunFailure": Outcome.FAILED,
    "rerunError": Outcome.ERROR,
}
_WORST_FIRST = (Outcome.ERROR, Outcome.FAILED, Outcome.SKIPPED, Outcome.PASSED)


class _Attempt(NamedTuple):
    tag: str
    outcome: Outcome
    message: str
    text: str


def _attempts(case: _Case) -> list[_Attempt]:
    """The flaky or rerun attempts recorded inside one ``<testcase>``, in file order."""
    found = []
    for child in case._elem:
        outcome = _ATTEMPT_TAGS.get(child.tag)
        if outcome is not None:
            trace = child.find("stackTrace")
            body = trace.text if trace is not None and trace.text else (child.text or "")
            found.append(_Attempt(child.tag, outcome, child.get("message") or "", body.strip("\r\n")))
    return found


def _element_outcome(case: _Case) -> Outcome:
    for candidate, kind in _PRECEDENCE:
        if any(isinstance(r, kind) for r in case.result):
            return candidate
    return Outcome.PASSED


def _runs(case: _Case) -> list[Outcome]:
    """The runs one ``<testcase>`` records: flaky attempts came before its final outcome, reruns after it."""
    attempts = _attempts(case)
    before = [a.outcome for a in attempts if a.tag.startswith("flaky")]
    after = [a.outcome for a in attempts if a.tag.startswith("rerun")]
    return [*before, _element_outcome(case), *after]


def _result(report: str, group: list[_Case], where: _Where) -> TestCaseResult:
    first = group[0]
    results: list[FinalResult] = [r for case in group for r in case.result]
    attempts = [attempt for case in group for attempt in _attempts(case)]
    runs = tuple(run for case in group for run in _runs(case))
    outcome = next(candidate for candidate in _WORST_FIRST if candidate in runs)
    message = ""
    for candidate, kind in _PRECEDENCE:
        if candidate is outcome:
            message = next((r.message for r in results if isinstance(r, kind) and r.message), "")
    if not message:
        message = next((a.message for a in attempts if a.outcome is outcome and a.message), "")
    texts = [_text(r) for r in results if isinstance(r, Error | Failure)]
    if not any(texts):
        texts = [a.text for a in attempts]
    durations = [d for d in (_duration(case) for case in group) if d is not None]

    classname = first.classname or ""
    name = first.name or ""
    file = (first.file or where.file or "").replace("\\", "/") or None
    return TestCaseResult(
        report=report,
        classname=classname,
        name=name,
        file=file,
        line=_line(first),
        nodeid=pytest_nodeid(classname, name, file),
        outcome=outcome,
        duration=sum(durations) if durations else None,
        message=message,
        text="\n\n".join(t for t in texts if t),
        runs=runs,
        suites=where.suites,
    )


def parse_report(
    path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> list[TestCaseResult]:
    """Parse one JUnit/xUnit XML file. Raises ``JUnitError(path, reason)`` when it cannot be read."""
    report = str(path)
    xml = _load(report, max_bytes, max_depth)
    counter = itertools.count()
    groups: dict[tuple[int, str, str, str], tuple[_Where, list[_Case]]] = {}
    for index, (where, case) in enumerate(_walk(xml, counter)):
        # An unnamed case is its own result: merging every nameless case of a suite would hide runs.
        name = case.name or f"\0{index}"
        key = (where.suite_id, case.classname or "", name, case.file or "")
        groups.setdefault(key, (where, []))[1].append(case)
    return [_result(report, group, where) for where, group in groups.values()]


def parse_reports(
    paths: Iterable[str | Path], *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> JUnitReport:
    """Parse every file; a file that cannot be read becomes a ``ReportError`` and the others still count."""
    cases: list[TestCaseResult] = []
    errors: list[ReportError] = []
    for path in paths:
        try:
            cases.extend(parse_report(path, max_bytes=max_bytes, max_depth=max_depth))
        except JUnitError as exc:
            errors.append(ReportError(path=exc.path, reason=exc.reason))
    return JUnitReport(cases=cases, errors=errors)


# --------------------------------------------------------------------------------------------------------
# pytest node ids

# Characters that never occur in a pytest module path component as it appears in a junit classname.
_NOT_MODULE_PART = re.compile(r"[\s/\\:\[\]()<>\"']")


def _is_test_module(part: str) -> bool:
    return part.startswith("test_") or part.endswith("_test")


def _split_module(dotted: str) -> tuple[list[str], list[str]] | None:
    """Split ``tests.test_x.TestK`` into module parts and class parts, or None if not a pytest module path.

    The module is the longest prefix whose last component looks like a pytest test module
    (``test_*`` or ``*_test``); the rest must be Python identifiers (class names).
    """
    parts = dotted.split(".")
    if any(not part or _NOT_MODULE_PART.search(part) for part in parts):
        return None
    for i in range(len(parts) - 1, -1, -1):
        if _is_test_module(parts[i]):
            classes = parts[i + 1 :]
            if all(c.isidentifier() for c in classes):
                return parts[: i + 1], classes
            return None
    return None


def _dotted(path: str) -> str:
    """What pytest's junitxml does to a node id's path part to make the classname."""
    return re.sub(r"\.py$", "", path.replace("/", "."))


def pytest_nodeid(classname: str, name: str, file: str | None) -> str | None:
    """Recover the pytest node id of a junit test case, or None when it does not look like pytest's.

    pytest writes ``classname`` as the node id's path with ``/`` turned into ``.`` and ``.py`` dropped,
    followed by the class names; ``name`` is the function name with its parameter id, untouched.
    ``file`` (xunit1) tells exactly where the module path ends; without it, a heuristic is used.
    """
    if not name:
        return None
    if file:
        path = file.replace("\\", "/")
        module = _dotted(path)
        if not classname:
            # A module that failed to collect: classname "", name "tests.test_x".
            return path if name == module else None
        if classname == module:
            return f"{path}::{name}"
        if classname.startswith(module + "."):
            classes = classname[len(module) + 1 :].split(".")
            if all(c.isidentifier() for c in classes):
                return "::".join([path, *classes, name])
        # The file does not match the classname (e.g. an absolute path); fall back to the classname.
    if not classname:
        split = _split_module(name)
        if split is not None and not split[1]:
            return "/".join(split[0]) + ".py"
        return None
    split = _split_module(classname)
    if split is None:
        return None
    module_parts, classes = split
    return "::".join(["/".join(module_parts) + ".py", *classes, name])


def find_reports(workspace: Path, patterns: Sequence[str], limit: int) -> tuple[Path, ...]:
    """The files inside ``workspace`` that the ``junit_paths`` globs match, at most ``limit`` (every front end's
    JUnit files from the job's own workspace)."""
    root = workspace.resolve()
    found: list[Path] = []
    for pattern in patterns:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise InputError(f"junit_paths must be relative to the workspace: {pattern!r}")
        for name in sorted(glob.glob(pattern, root_dir=root, recursive=True)):
            path = (root / name).resolve()
            # A link planted in the repo must not make us read files outside it.
            if path.is_file() and path.is_relative_to(root) and path not in found:
                found.append(path)
    return tuple(found[:limit])
