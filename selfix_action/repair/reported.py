"""A CI report's test cases, resolved to the tests pytest collects in this checkout.

A JUnit report names a test by ``classname`` and ``name`` (and, in pytest's ``xunit1``, the ``file``); pytest made
them from the node id (``mangle_test_address`` in its junitxml plugin): the node id's path with ``/`` turned into
``.`` and ``.py`` dropped, then the classes, joined by ``.``; the name is the function with its parameter id. No
naming rule can turn that back into a node id: ``shop/tests.py``, a ``python_files = tests_*.py`` module, a
doctest (``pkg/mod.py::pkg.mod.func``) or a nested class all look the same from the classname. So the node id
comes from the checkout: every collected test's node id is mangled the same way, and a case resolves to the test
whose (classname, name) it carries.

The report may come from pytest started in another folder than selfix starts it (CI ran ``pytest backend/tests``
from the repository's root, selfix runs in ``backend/``; or the other way round; or ``junit_prefix`` was set):
then one classname is the other's dotted suffix, and the longest match wins. A case that matches no collected
test, or two equally well, is unresolved, with the reason.

Pure: the sandbox's collected node ids come in as strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ReportedTest", "Resolution", "junit_names", "resolve_reported"]


@dataclass(frozen=True)
class ReportedTest:
    """One test case of a CI report: what the report says of it, and the node id its names suggest (``guess``,
    from pytest's naming rules; None where they cannot tell)."""

    classname: str
    name: str
    file: str | None = None  # xunit1's file attribute: the path relative to the rootdir CI's pytest had
    guess: str | None = None
    # A JavaScript runner's test: its describe blocks' and its own titles joined by spaces (what jest -t and
    # mocha --grep match), resolved against the collected ids' titles, the file narrowing when the report has it.
    full_title: str | None = None

    @classmethod
    def from_nodeid(cls, nodeid: str) -> ReportedTest:
        """A test named by its node id (the CLI's, the MCP server's and the tests' own way to name one)."""
        classname, name = junit_names(nodeid)
        return cls(classname, name, nodeid.partition("::")[0] if "::" in nodeid else None, nodeid)

    @property
    def label(self) -> str:
        """How the report names it, for messages: the node id its names suggest, else classname and name."""
        if self.full_title is not None:
            return f"{self.file}: {self.full_title}" if self.file else self.full_title
        if self.guess:
            return self.guess
        return f"{self.classname}::{self.name}" if self.classname else self.name


@dataclass(frozen=True)
class Resolution:
    """The report's cases resolved: ``nodeids`` in the report's order (each once), and the cases that were not,
    each with its reason."""

    nodeids: tuple[str, ...] = ()
    unresolved: tuple[tuple[ReportedTest, str], ...] = ()

    def missing(self) -> tuple[str, ...]:
        """The unresolved cases as lines: the case, then why."""
        return tuple(f"{case.label} ({why})" for case, why in self.unresolved)


def junit_names(nodeid: str) -> tuple[str, str]:
    """The (classname, name) pytest's junitxml writes for ``nodeid`` (its ``mangle_test_address``; pytest before
    4 also dropped a ``()`` instance part)."""
    path, bracket, params = nodeid.partition("[")
    names = [part for part in path.split("::") if part != "()"]
    module = names[0].replace("\\", "/").replace("/", ".")
    names[0] = module[:-3] if module.endswith(".py") else module
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _dotted_suffix(longer: str, shorter: str) -> bool:
    return longer == shorter or (bool(shorter) and longer.endswith("." + shorter))


def _path_suffix(longer: str, shorter: str) -> bool:
    return longer == shorter or longer.endswith("/" + shorter)


# A collected test as the index holds it: its node id, and the classname and name junitxml would write for it.
_Collected = tuple[str, str, str]


def _score(case: ReportedTest, collected: _Collected) -> int:
    """How well a collected test fits ``case``: 0 not at all; an exact classname beats a dotted suffix either way,
    and a matching xunit1 file adds to either."""
    nodeid, classname, name = collected
    if not case.classname and not classname:
        # A module that failed to collect: the name is the dotted module, seen from either rootdir.
        mine, theirs = name, case.name
    elif name == case.name and classname and case.classname:
        mine, theirs = classname, case.classname
    else:
        return 0
    if mine == theirs:
        fits = 3
    elif _dotted_suffix(mine, theirs) or _dotted_suffix(theirs, mine):
        fits = 2
    else:
        return 0
    if case.file:
        path = nodeid.partition("::")[0]
        reported = case.file.replace("\\", "/")
        reported = reported[2:] if reported.startswith("./") else reported
        if _path_suffix(reported, path) or _path_suffix(path, reported):
            fits += 1
    return fits


def _module_suffix_names(name: str) -> Iterable[str]:
    """``a.b.c`` -> ``a.b.c``, ``b.c``, ``c``: a collection error's name seen from a deeper or shallower rootdir."""
    parts = name.split(".")
    for i in range(len(parts)):
        yield ".".join(parts[i:])


def resolve_reported(cases: Sequence[ReportedTest], collected: Iterable[str]) -> Resolution:
    """Resolve each case to the collected test it names (see the module's docstring)."""
    by_name: dict[str, list[_Collected]] = {}
    collected_ids = list(collected)
    for nodeid in collected_ids:
        classname, name = junit_names(nodeid)
        by_name.setdefault(name, []).append((nodeid, classname, name))
        if not classname:  # collection errors: index the module's dotted suffixes as well
            for suffix in list(_module_suffix_names(name))[1:]:
                by_name.setdefault(suffix, []).append((nodeid, classname, name))
    nodeids: dict[str, None] = {}
    unresolved: list[tuple[ReportedTest, str]] = []
    by_title: dict[str, list[str]] = {}
    for case in dict.fromkeys(cases):
        if case.full_title is not None:
            if not by_title:
                by_title = _titles(collected_ids)
            titled, why = _by_title(case, by_title)
            if titled is None:
                unresolved.append((case, why))
            else:
                nodeids[titled] = None
            continue
        found: str | None = case.guess  # a node id that is here as it stands
        if found is None or all(found != hit[0] for hit in by_name.get(case.name, ())):
            found, why = _best(case, by_name)
        parent = _subtest_parent(case)
        if found is None and parent is not None:
            # unittest's subTest, as unittest-xml-reporting writes it ("test_valid [quoted-unicode]", "test_x
            # (i=1)"): one case per subtest, where pytest has the one test that runs them all.
            found, _ = _best(parent, by_name)
        if found is None:
            found = _module_error(case, by_name) or None
        if found is None:
            unresolved.append((case, why))
            continue
        nodeids[found] = None
    return Resolution(tuple(nodeids), tuple(unresolved))


TITLE_JOIN = " > "  # how a JavaScript test's titles are joined in its id (``toolchains.node.node_test_id``)


def _titles(collected: Iterable[str]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for nodeid in collected:
        _path, sep, rest = nodeid.partition("::")
        if sep:
            index.setdefault(_attribute_text(" ".join(rest.split(TITLE_JOIN))), []).append(nodeid)
    return index


def _attribute_text(title: str) -> str:
    """A title as an XML attribute reads back: a parser turns each tab, newline and carriage return in it into a
    space (XML's attribute-value normalization), so ESLint's ``a;\n++b`` is ``a; ++b`` in any JUnit report."""
    return title.replace("\r\n", " ").translate({9: " ", 10: " ", 13: " "})


def _file(nodeid: str) -> str:
    return nodeid.partition("::")[0]


def _by_title(case: ReportedTest, by_title: dict[str, list[str]]) -> tuple[str | None, str]:
    assert case.full_title is not None
    named = by_title.get(_attribute_text(case.full_title), [])
    if case.file:
        reported = case.file.replace("\\", "/").removeprefix("./")
        named = [
            n
            for n in named
            if _path_suffix(reported, n.partition("::")[0]) or _path_suffix(n.partition("::")[0], reported)
        ]
    if not named:
        return None, "no test run here has that title" + (f" in {case.file}" if case.file else "")
    if len(named) > 1:
        return None, f"ambiguous: {len(named)} tests run here have that title ({', '.join(named[:3])})"
    return named[0], ""


def _module_error(case: ReportedTest, by_name: dict[str, list[_Collected]]) -> str:
    """The collection error of the module ``case`` is in, when that module does not import here: a test CI ran
    (or the developers' new test) whose module fails at import on this checkout, say for a name the code lacks.
    The module stands for its tests (``verify.not_passing``). "" when it is not so."""
    if not case.classname:
        return ""
    parts = case.classname.split(".")
    for end in range(len(parts), 0, -1):  # the classname's classes dropped one by one: the module is a prefix
        module = ReportedTest("", ".".join(parts[:end]), case.file)
        found, _ = _best(module, by_name)
        if found is not None and "::" not in found:
            return found
    return ""


_SUBTEST = re.compile(r"^(?P<name>[^\s\[\]()]+) [\[(].*[\])]$")


def _subtest_parent(case: ReportedTest) -> ReportedTest | None:
    """The test a subtest's case names, or None when ``case`` names no subtest."""
    matched = _SUBTEST.match(case.name)
    if matched is None:
        return None
    return ReportedTest(case.classname, matched["name"], case.file, None)


def _best(case: ReportedTest, by_name: dict[str, list[_Collected]]) -> tuple[str | None, str]:
    named = by_name.get(case.name, [])
    if not case.classname:
        named = [
            *named,
            *(hit for suffix in list(_module_suffix_names(case.name))[1:] for hit in by_name.get(suffix, [])),
        ]
    scored = sorted(((_score(case, hit), hit[0]) for hit in dict.fromkeys(named)), reverse=True)
    scored = [(s, n) for s, n in scored if s > 0]
    if not scored:
        if named:
            others = ", ".join(sorted({hit[0] for hit in named})[:3])
            return (
                None,
                f"no test collected here has that name in {case.classname or 'that module'}; same name: {others}",
            )
        return None, "no test collected here has that name"
    best = [n for s, n in scored if s == scored[0][0]]
    if len(best) > 1:
        return None, f"ambiguous: {len(best)} collected tests match it equally ({', '.join(best[:3])})"
    return best[0], ""
