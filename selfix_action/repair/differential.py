"""Behaviour beyond the tests: what the edited functions do, unpatched and patched, on the inputs the tests
actually passed them and on variations of those (``Sandbox.probe_calls`` records and replays; this module only
compares its text).

A patch that passes the tests can still be wrong where no test looks: it changes what a call a passing test made
returns (nothing checks it), or it handles the failing input and not its siblings (a string, not a tuple). The
probe shows both: the inputs whose outcome changed, old -> new, each marked with where its call came from (a
failing or a passing test, as recorded or varied), and, given a second patch that passed verification too, the
inputs on which the two patches disagree. Outcomes that differ between two runs of the unpatched code are the
code's own variation (time, randomness, ids) and are left out.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from selfix_action.repair.localize import enclosing_function, function_spans
from selfix_action.repair.patches import hunks
from selfix_action.repair.report import BehaviourEvidence, InputChange
from selfix_action.repair.values import CallProbe, ProbeLine, ProbeTarget

BEFORE = "before"
BEFORE_AGAIN = "before again"
# How many of the tests that run the edited lines the probe records calls from (the failing ones first).
MAX_PROBED_TESTS = 25
MAX_SHOWN_CHANGES = 40


def probe_targets(originals: Mapping[str, str], patches: Sequence[Mapping[str, str]]) -> tuple[ProbeTarget, ...]:
    """The functions the patches edit, by their place in the unpatched files (module-level edits have none)."""
    found: dict[str, ProbeTarget] = {}
    for files in patches:
        for hunk in hunks(originals, files):
            original = originals.get(hunk.path, "")
            spans = function_spans(hunk.path, original)
            span = enclosing_function(spans, hunk.original_lines[0])
            if span is None:
                continue
            target = ProbeTarget(path=hunk.path, qualname=span.name, first=span.start, last=span.end)
            found.setdefault(target.id, target)
    return tuple(found.values())


def probed_tests(
    f2p: Sequence[str],
    p2p: Sequence[str],
    coverage: Mapping[str, Mapping[str, Sequence[int]]] | None,
    targets: Sequence[ProbeTarget],
) -> tuple[str, ...]:
    """The failing tests, then the passing tests whose baseline coverage runs a target's lines (all passing tests
    of the failing tests' files when there is no coverage), at most ``MAX_PROBED_TESTS``."""
    chosen = list(f2p)
    if coverage is not None:
        for test in p2p:
            files = coverage.get(test, {})
            if any(t.first <= line <= t.last for t in targets for line in files.get(t.path, ())):
                chosen.append(test)
    else:
        failing_files = {t.split("::", 1)[0] for t in f2p}
        chosen += [t for t in p2p if t.split("::", 1)[0] in failing_files]
    return tuple(dict.fromkeys(chosen))[:MAX_PROBED_TESTS]


def ending(outcome: str) -> str:
    """How a call ended: "returns", or the kind of exception it raised ("raises ValueError")."""
    result = outcome.partition(" | arguments after: ")[0]
    return result.split(":", 1)[0] if result.startswith("raises ") else result.split(" ", 1)[0]


def _behaviour(outcome: str) -> tuple[str, str]:
    """What an outcome says of behaviour: the value returned, or only the kind of exception raised (its message
    is wording: two versions that both refuse an input refuse it alike), and the mutable arguments afterwards."""
    result, _, after = outcome.partition(" | arguments after: ")
    return (ending(result) if result.startswith("raises ") else result), after


# What a replay line says when the call never ran: rebuilding its arguments can run the code under test (a dict
# subclass's __setitem__ while unpickling), so these are no outcome of the function and never compared.
NOT_RUN = ("cannot rebuild the call", "cannot import", "function not found")


# An object recorded on the unpatched code lacks the attributes the patch adds to its class (a new dataclass
# field, a new ``self.x = ...`` in ``__init__``): replayed on the patch, its methods raise AttributeError for
# them. That is the recording's age, not the patch's behaviour (readers saw such rows in the reviewer's table).
_MISSING_ATTRIBUTE = re.compile(r"^raises AttributeError: .*has no attribute '(\w+)'")


def added_attributes(originals: Mapping[str, str], files: Mapping[str, str]) -> frozenset[str]:
    """The attribute names a version's files give a class that the original files never give one: assigned to
    ``self.<name>`` in a method, or declared in a class body (a dataclass field)."""

    def attributes(text: str) -> set[str]:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return set()
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id == "self":
                    found.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        found.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        found.update(t.id for t in item.targets if isinstance(t, ast.Name))
        return found

    added: set[str] = set()
    for path, text in files.items():
        if path.endswith(".py"):
            added |= attributes(text) - attributes(originals.get(path, ""))
    return frozenset(added)


def _missing_added(outcome: str, added: Collection[str]) -> bool:
    matched = _MISSING_ATTRIBUTE.match(outcome)
    return matched is not None and matched.group(1) in added


# The variations that pass nothing: Python's None, JavaScript's null and undefined.
_NOTHING = (" None", " null", " undefined")


def _by_key(lines: Sequence[ProbeLine]) -> dict[tuple[str, int, str], ProbeLine]:
    return {line.key: line for line in lines}


def compare(
    probe: CallProbe,
    old: str,
    new: str,
    failing: Collection[str],
    *,
    unstable: Collection[tuple[str, int, str]] = (),
    raising: list[InputChange] | None = None,
    added: Mapping[str, Collection[str]] | None = None,
) -> tuple[list[InputChange], int]:
    """The inputs whose outcome differs between versions ``old`` and ``new`` (leaving out ``unstable`` ones), and
    how many inputs both versions ran. ``raising`` (when given) collects the failing tests' inputs that raise
    alike on both. ``added``: each version's new attributes (``added_attributes``); a call that fails on one of
    them ran on an object recorded before the version gave its class that attribute, and is no outcome."""
    first, second = _by_key(probe.versions.get(old, ())), _by_key(probe.versions.get(new, ()))
    changes: list[InputChange] = []
    compared = 0
    for key, line in first.items():
        other = second.get(key)
        if other is None or key in unstable or line.outcome.startswith(NOT_RUN) or other.outcome.startswith(NOT_RUN):
            continue
        if added and (
            _missing_added(line.outcome, added.get(old, ())) or _missing_added(other.outcome, added.get(new, ()))
        ):
            continue
        compared += 1
        change = InputChange(
            function=line.target,
            input=line.text,
            variation=line.variation,
            test=line.test,
            source="failing" if line.test in failing else "passing",
            before=line.outcome,
            after=other.outcome,
        )
        if _behaviour(other.outcome) != _behaviour(line.outcome):
            changes.append(change)
        elif (
            raising is not None
            and change.source == "failing"
            and other.outcome.startswith("raises ")
            and not line.variation.endswith(_NOTHING)  # nothing is seldom a sibling of the failing input
        ):
            raising.append(change)
    return changes, compared


def settling_rows(disagreements: Sequence[InputChange]) -> list[InputChange]:
    """The disagreements QA is asked to settle: the ones on a test's own call or a sibling of it first, and those
    where a variation passes nothing (None, null, undefined) only when nothing else differs. Nothing is seldom
    what the code is meant to take (a syntax-tree node, a long's value), so neither patch has a right answer
    there, and readers asked to settle such rows could only write a test both patches fail."""
    meaningful = [change for change in disagreements if not change.variation.endswith(_NOTHING)]
    return meaningful or list(disagreements)


def unstable_inputs(probe: CallProbe) -> set[tuple[str, int, str]]:
    """Inputs whose outcome differed between two runs of the unpatched code."""
    once, again = _by_key(probe.versions.get(BEFORE, ())), _by_key(probe.versions.get(BEFORE_AGAIN, ()))
    return {
        key for key, line in once.items() if key in again and _behaviour(again[key].outcome) != _behaviour(line.outcome)
    }


def _ordered(changes: Sequence[InputChange]) -> tuple[InputChange, ...]:
    """Changes outside the failing tests' calls first (the evidence against), then the rest; at most a page."""
    return tuple(sorted(changes, key=lambda c: (not c.outside, c.source != "passing")))[:MAX_SHOWN_CHANGES]


def behaviour_evidence(
    probe: CallProbe,
    failing: Collection[str],
    *,
    patch: str = "patch",
    second: str = "",
    second_source: str = "",
    second_diff: str = "",
    added: Mapping[str, Collection[str]] | None = None,
) -> BehaviourEvidence:
    """The probe's evidence on ``patch`` (against the unpatched code) and, when ``second`` names a version, on where
    the second solution and the patch disagree."""
    if BEFORE not in probe.versions or patch not in probe.versions:
        return BehaviourEvidence(recorded=probe.recorded, note=probe.note or "the probe did not run")
    unstable = unstable_inputs(probe)
    raising: list[InputChange] = []
    changed, compared = compare(probe, BEFORE, patch, failing, unstable=unstable, raising=raising, added=added)
    disagreements: list[InputChange] = []
    note = probe.note
    if second and second in probe.versions:
        disagreements, _ = compare(probe, patch, second, failing, unstable=unstable, added=added)
    elif second:
        note = note or "the second solution could not be replayed"
    return BehaviourEvidence(
        recorded=probe.recorded,
        compared=compared,
        unstable=len(unstable),
        changed=_ordered(changed),
        second_source=second_source if second in probe.versions else "",
        second_diff=second_diff if second in probe.versions else "",
        disagreements=_ordered(disagreements),
        still_raising=tuple(raising[:MAX_SHOWN_CHANGES]),
        note=note,
    )


def untested_callers(
    edited: Collection[tuple[str, str]],
    sources: Mapping[str, str],
    coverage: Mapping[str, Mapping[str, Sequence[int]]],
) -> tuple[str, ...]:
    """The project's functions (``path:qualname``, outside the edited ones) that call an edited function and that
    no test ran on the unpatched code (``coverage``: each test's lines): whatever the patch now answers them, no
    test checks it (Pencilblue-6: ``isFloat`` made to refuse integers, and the job runner's progress, which asks
    it, stops moving). A call is matched by the function's name, so only names the project defines once count:
    ``write`` or ``get`` could be anything's."""
    names = {qualname.rsplit(".", 1)[-1] for _, qualname in edited}
    spans = {path: function_spans(path, text) for path, text in sources.items() if any(n in text for n in names)}
    # a file that never mentions a name defines none of them either
    defined = Counter(span.name.rsplit(".", 1)[-1] for file_spans in spans.values() for span in file_spans)
    unique = {n for n in names if defined[n] == 1}
    if not unique:
        return ()
    ran: dict[str, set[int]] = {}
    for files in coverage.values():
        for path, lines in files.items():
            ran.setdefault(path, set()).update(lines)
    found = []
    for path, file_spans in spans.items():
        for span in file_spans:
            if (path, span.name) in edited or not span.called_names & unique:
                continue
            if not span.statement_lines & ran.get(path, set()):
                found.append(f"{path}:{span.name}")
    return tuple(found)
