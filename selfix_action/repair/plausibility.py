"""How plausible a verified patch is as the real fix, beyond passing the tests: known overfitting patterns and
how much it changes what the passing tests execute.

Tests that a patch makes pass say little about *how*: deleting the guard that raises, forcing a condition, or
returning early satisfies a failing test as well as the fix does. Each pattern below is one that studies of
test-suite-based repair (Qi et al. 2015 "plausible patches", Smith et al. 2015 "overfitting") found
overrepresented among plausible-but-wrong patches; each lowers plausibility by a named factor:

- ``guard_deleted``: an ``if ...: raise/return`` removed;
- ``condition_constant``: a truth test forced constant (``if True``, ``x or True``, ``y and False``);
- ``raise_deleted`` / ``return_deleted``: a ``raise`` or ``return`` removed;
- ``loop_removed``: a ``for``/``while`` loop removed;
- ``broad_except``: a bare ``except:`` or ``except Exception`` added;
- ``early_exit``: a ``return``/``continue``/``break`` added that skips statements after it in its block;
- ``condition_dropped`` (medium): an operand of an ``and``/``or`` removed (``a is not None or b is not None`` ->
  ``a is not None``: the check that made the failing test fail may be exactly what was right);
- ``read_dropped`` (medium): a parameter or variable the function read is no longer read (a swapped variable
  that drops a check: ``if a is None or b is None`` -> ``if a is None or a is None``);
- ``clone_unchanged`` (medium): the code the patch replaced still appears, unchanged, elsewhere in the same
  function (the fix of one of two branches that share the bug);
- ``coercion_added`` (medium): a builtin conversion (``str(...)``, ``int(...)``, ``float(...)``...) wrapped
  around a value: it changes the value's type for every caller, not only the tests' (``str(int_str)`` made a
  string assertion pass and broke floats), though it is a real fix often enough not to be ``low``.

Patterns are ``low`` confidence unless named ``medium`` above (``PATTERN_LEVELS``).

``behaviour_change`` compares per-test coverage of the passing tests before and after the patch: a passing test
whose executed lines (outside the edited lines) differ now runs another path through the code, which a fix of
the failing tests' bug should rarely cause.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from selfix_action.repair.differential import ending
from selfix_action.repair.report import (
    CONFIDENCE_ORDER,
    BehaviourEvidence,
    Confidence,
    ConfidenceLevel,
    ConfidenceReason,
    InputChange,
)
from selfix_action.repair.review import Review, ReviewVerdict

PATTERN_FACTORS: dict[str, float] = {
    "guard_deleted": 0.25,
    "condition_constant": 0.3,
    "raise_deleted": 0.35,
    "return_deleted": 0.45,
    "loop_removed": 0.35,
    "broad_except": 0.35,
    "early_exit": 0.35,
    "condition_dropped": 0.6,
    "read_dropped": 0.6,
    "clone_unchanged": 0.8,
    "coercion_added": 0.7,
}
# The highest confidence a patch showing the pattern can get (see assess_confidence); "low" if not listed.
PATTERN_LEVELS: dict[str, ConfidenceLevel] = {
    "condition_dropped": "medium",
    "read_dropped": "medium",
    "clone_unchanged": "medium",
    "coercion_added": "medium",
}


@dataclass(frozen=True)
class Pattern:
    """One overfitting pattern a patch shows."""

    name: str  # a key of PATTERN_FACTORS
    text: str  # what the patch does, e.g. "deletes the guard `if x is None: raise ...` in `urljoin`"

    @property
    def factor(self) -> float:
        return PATTERN_FACTORS[self.name]

    @property
    def level(self) -> ConfidenceLevel:
        return PATTERN_LEVELS.get(self.name, "low")


def plausibility(patterns: Sequence[Pattern]) -> float:
    """1.0 for a patch without any pattern; each pattern multiplies by its factor."""
    score = 1.0
    for pattern in patterns:
        score *= pattern.factor
    return round(score, 4)


# -- patterns --------------------------------------------------------------------------------------------
_EXITS = (ast.Return, ast.Raise)
_JUMPS = (ast.Return, ast.Continue, ast.Break)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_BROAD = frozenset({"Exception", "BaseException"})


def _scopes(tree: ast.Module) -> dict[str, ast.AST]:
    """Qualified name -> function (and the module itself as ``<module>``, its top-level statements only)."""
    found: dict[str, ast.AST] = {"<module>": ast.Module(body=[s for s in tree.body if not _is_def(s)], type_ignores=[])}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found[prefix + child.name] = child
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(tree, "")
    return found


def _is_def(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of one function (or the module's top level), nested functions and classes excluded."""
    nodes: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if _is_def(node):
            continue
        nodes.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return nodes


def _guards(nodes: Sequence[ast.AST]) -> list[str]:
    """``if`` statements whose body leaves (raise or return): each as its test's text."""
    return [
        ast.unparse(node.test)
        for node in nodes
        if isinstance(node, ast.If) and any(isinstance(s, _EXITS) for s in node.body)
    ]


def _constant_test(test: ast.AST) -> bool:
    if isinstance(test, ast.Constant):
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _constant_test(test.operand)
    if isinstance(test, ast.BoolOp):
        return any(isinstance(value, ast.Constant) for value in test.values)
    if isinstance(test, ast.Compare):
        return all(isinstance(side, ast.Constant) for side in (test.left, *test.comparators))
    return False


def _constant_tests(nodes: Sequence[ast.AST]) -> list[str]:
    tests: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests += node.ifs
        elif isinstance(node, ast.BoolOp) and any(isinstance(v, ast.Constant) for v in node.values):
            tests.append(node)  # ``x or True`` anywhere, e.g. in a return
    # ``while True`` is an idiom, not a forced condition.
    return sorted({ast.unparse(t) for t in tests if _constant_test(t) and ast.unparse(t) != "True"})


def _broad_handlers(nodes: Sequence[ast.AST]) -> int:
    return sum(
        1
        for node in nodes
        if isinstance(node, ast.ExceptHandler)
        and (node.type is None or (isinstance(node.type, ast.Name) and node.type.id in _BROAD))
    )


def _early_exits(nodes: Sequence[ast.AST]) -> int:
    """Jumps with statements after them in the same block (dead code they skip)."""
    count = 0
    for node in nodes:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                count += sum(1 for s in block[:-1] if isinstance(s, _JUMPS))
    return count


def _count(nodes: Sequence[ast.AST], kinds: tuple[type, ...]) -> int:
    return sum(1 for node in nodes if isinstance(node, kinds))


def scope_patterns(name: str, before: ast.AST, after: ast.AST) -> list[Pattern]:
    """The overfitting patterns in one function's (or the module top level's) change from ``before`` to ``after``."""
    old, new = _own_nodes(before), _own_nodes(after)
    where = f"in `{name}`"
    found: list[Pattern] = []
    old_guards, new_guards = _guards(old), _guards(new)
    removed = [g for g in old_guards if g not in new_guards]
    if len(new_guards) < len(old_guards) and removed:
        found.append(Pattern("guard_deleted", f"deletes the guard `if {removed[0]}: ...` (raise/return) {where}"))
    forced = [t for t in _constant_tests(new) if t not in _constant_tests(old)]
    if forced:
        found.append(Pattern("condition_constant", f"forces a condition constant (`{forced[0]}`) {where}"))
    if not any(p.name == "guard_deleted" for p in found):
        if _count(new, (ast.Raise,)) < _count(old, (ast.Raise,)):
            found.append(Pattern("raise_deleted", f"deletes a `raise` {where}"))
        if _count(new, (ast.Return,)) < _count(old, (ast.Return,)):
            found.append(Pattern("return_deleted", f"deletes a `return` {where}"))
    if _count(new, _LOOPS) < _count(old, _LOOPS):
        found.append(Pattern("loop_removed", f"removes a loop {where}"))
    if _broad_handlers(new) > _broad_handlers(old):
        found.append(Pattern("broad_except", f"adds a bare or catch-all `except` {where}"))
    if _early_exits([after, *new]) > _early_exits([before, *old]):
        found.append(Pattern("early_exit", f"adds a return/continue/break that skips the statements after it {where}"))
    condition = _dropped_operand(old, new)
    if condition and not found:  # a deleted guard or loop drops its conditions too: that pattern says it
        found.append(Pattern("condition_dropped", f"drops the condition `{condition}` {where}"))
    dropped = sorted((_reads(old) - _reads(new)) & _locals(before))  # not a builtin or global swapped for another
    if dropped and not found:  # a deleted statement or loop drops its reads too: that pattern says it
        found.append(Pattern("read_dropped", f"no longer reads `{dropped[0]}` {where}"))
    coerced = _added_coercions(old, new)
    if coerced:
        # `str(int_str)` makes an assertion on a string pass and breaks every other type that flows there:
        # a conversion is a real fix often enough to stay medium, never high.
        found.append(Pattern("coercion_added", f"converts a value with `{coerced[0]}` {where}"))
    clone = _clone_left(before, after)
    if clone:
        found.append(Pattern("clone_unchanged", f"replaces `{clone}` but leaves the same code elsewhere {where}"))
    return found


# Builtin conversions: wrapping a value in one of them changes its type for every caller, not only the tests'.
_COERCIONS = frozenset({"str", "int", "float", "bool", "repr", "bytes", "list", "tuple"})


def _added_coercions(old: Sequence[ast.AST], new: Sequence[ast.AST]) -> list[str]:
    """The conversion calls (``str(x)``...) the patch adds, as text."""

    def calls(nodes: Sequence[ast.AST]) -> list[ast.Call]:
        return [
            n
            for n in nodes
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _COERCIONS and n.args
        ]

    old_calls, new_calls = calls(old), calls(new)
    if len(new_calls) <= len(old_calls):
        return []
    before = {ast.dump(c) for c in old_calls}
    return [ast.unparse(c) for c in new_calls if ast.dump(c) not in before]


def _dropped_operand(old: Sequence[ast.AST], new: Sequence[ast.AST]) -> str:
    """An operand of an ``and``/``or`` the patch removes (fewer operands in all, and one of them is gone from the
    patched function altogether), as text; "" when none is."""

    def operands(nodes: Sequence[ast.AST]) -> list[ast.expr]:
        return [value for node in nodes if isinstance(node, ast.BoolOp) for value in node.values]

    before, after = operands(old), operands(new)
    if len(after) >= len(before):
        return ""
    remaining = {ast.dump(node) for node in new}
    gone = [value for value in before if ast.dump(value) not in remaining]
    return ast.unparse(gone[0]) if gone else ""


def _locals(scope: ast.AST) -> set[str]:
    """A function's parameters and the names it assigns (none for the module level)."""
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    args = scope.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    stores = (n.id for n in _own_nodes(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names | set(stores)


def _reads(nodes: Sequence[ast.AST]) -> set[str]:
    return {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


# Expressions too small to call a second occurrence a clone of the edited code.
_TRIVIAL = (ast.Name, ast.Constant, ast.Attribute, ast.Starred, ast.keyword, ast.arg, ast.expr_context)


def _changed_site(
    old: ast.AST, new: ast.AST, context: tuple[ast.AST, ast.AST] | None = None
) -> tuple[ast.AST, ast.AST] | None:
    """The smallest non-trivial expressions (old, new) that contain the one change between two trees, descending
    while exactly one child differs and the node kinds match; None when the change is not one such site."""
    if isinstance(old, ast.expr) and not isinstance(old, _TRIVIAL):
        context = (old, new)
    if type(old) is not type(new):
        return context
    old_children, new_children = list(ast.iter_child_nodes(old)), list(ast.iter_child_nodes(new))
    plain = [f for f in old._fields if not isinstance(getattr(old, f), ast.AST | list)]
    if any(getattr(old, f) != getattr(new, f) for f in plain) or len(old_children) != len(new_children):
        return context
    differing = [(a, b) for a, b in zip(old_children, new_children, strict=True) if ast.dump(a) != ast.dump(b)]
    if len(differing) != 1:
        return context if differing else None
    return _changed_site(*differing[0], context)


def _clone_left(before: ast.AST, after: ast.AST) -> str:
    """The text of the replaced expression if it still occurs, unchanged, in the patched function; else ""."""
    site = _changed_site(before, after)
    if site is None:
        return ""
    old, new = site
    key = ast.dump(old)
    inside_edit = {id(node) for node in ast.walk(new)}  # ``x`` -> ``x and y`` keeps ``x``: not a clone
    others = [n for n in _own_nodes(after) if isinstance(n, type(old)) and id(n) not in inside_edit]
    if any(ast.dump(node) == key for node in others):
        return ast.unparse(old)
    return ""


def overfitting_patterns(originals: Mapping[str, str], files: Mapping[str, str]) -> list[Pattern]:
    """Every overfitting pattern the patch (whole new file texts) shows against the original texts."""
    found: list[Pattern] = []
    for path in sorted(files):
        if not path.endswith(".py") or path not in originals:
            continue
        try:
            before, after = ast.parse(originals[path]), ast.parse(files[path])
        except (SyntaxError, ValueError):
            continue
        old_scopes, new_scopes = _scopes(before), _scopes(after)
        for name, old_scope in old_scopes.items():
            new_scope = new_scopes.get(name)
            if new_scope is not None and ast.dump(old_scope) != ast.dump(new_scope):
                found += scope_patterns(name, old_scope, new_scope)
    return found


# -- what the passing tests execute ------------------------------------------------------------------------
@dataclass(frozen=True)
class BehaviourChange:
    """How a patch changed what the passing tests execute (per-test coverage before and after it)."""

    measured: bool  # False: no coverage before or after (``note`` says why)
    compared: int = 0  # passing tests with coverage in both runs
    changed: tuple[str, ...] = ()  # of those, the ones whose executed lines (outside the edit) differ
    running_edit: int = 0  # of those, the ones that execute an edited line
    # tests whose lines differ although they never run the edit (a function-level patch cannot have moved them:
    # run-to-run variation, e.g. socket tests that take another branch on a retry); left out of ``changed``
    unrelated: int = 0
    note: str = ""


def _line_maps(
    originals: Mapping[str, str], files: Mapping[str, str]
) -> dict[str, tuple[dict[int, int], set[int], set[int]]]:
    """Per patched file: patched line -> original line for unchanged lines, and the edited lines on each side."""
    maps = {}
    for path, text in files.items():
        before = originals.get(path, "").splitlines()
        matcher = difflib.SequenceMatcher(a=before, b=text.splitlines(), autojunk=False)
        mapping: dict[int, int] = {}
        edited_before: set[int] = set()
        edited_after: set[int] = set()
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                mapping.update({j + 1: i + 1 for i, j in zip(range(i1, i2), range(j1, j2), strict=True)})
            else:
                edited_before.update(range(i1 + 1, i2 + 1))
                edited_after.update(range(j1 + 1, j2 + 1))
        maps[path] = (mapping, edited_before, edited_after)
    return maps


def behaviour_change(
    before: Mapping[str, Mapping[str, Sequence[int]]] | None,
    after: Mapping[str, Mapping[str, Sequence[int]]] | None,
    originals: Mapping[str, str],
    files: Mapping[str, str],
    passing: Sequence[str],
) -> BehaviourChange:
    """Which ``passing`` tests execute other lines after the patch than before (nodeid -> file -> lines, as
    ``TestRun.coverage``). Edited lines are left out of the comparison (an inserted line run by every test is the
    fix, not a change of path); a test that runs one of them counts in ``running_edit``."""
    if not before or not after:
        return BehaviourChange(
            False, note="no per-test coverage " + ("before" if not before else "after") + " the patch"
        )
    maps = _line_maps(originals, files)
    # An edit at module level (a constant, an import) runs at import time, run by no test: every test may feel it.
    module_level = any(_module_level_edit(originals.get(path, ""), maps[path][1]) for path in maps)
    compared = 0
    changed: list[str] = []
    running_edit = 0
    unrelated = 0
    for test in passing:
        if test not in before or test not in after:
            continue
        compared += 1
        old_lines: set[tuple[str, int]] = set()
        new_lines: set[tuple[str, int]] = set()
        touches = False
        for path, lines in before[test].items():
            edited = maps[path][1] if path in maps else set()
            touches = touches or any(line in edited for line in lines)
            old_lines.update((path, line) for line in lines if line not in edited)
        for path, lines in after[test].items():
            if path in maps:
                mapping, _, edited = maps[path]
                touches = touches or any(line in edited for line in lines)
                new_lines.update((path, mapping[line]) for line in lines if line in mapping)
            else:
                new_lines.update((path, line) for line in lines)
        running_edit += touches
        if old_lines != new_lines:
            if touches or module_level:
                changed.append(test)
            else:
                unrelated += 1
    return BehaviourChange(True, compared, tuple(changed), running_edit, unrelated)


def _module_level_edit(original: str, edited: set[int]) -> bool:
    """Whether an edited line of ``original`` lies outside every function (a file that does not parse: assume so)."""
    try:
        tree = ast.parse(original)
    except SyntaxError:
        return True
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return any(line not in inside for line in edited)


# -- confidence ------------------------------------------------------------------------------------------
# A patch is low when this many passing tests, or more than half of those that run the edited lines (at least
# two), execute other lines than before it.
LOW_CHANGED_TESTS = 3


@dataclass(frozen=True)
class Alternatives:
    """What the loop saw of other candidates around the winner (see ``HealingLoop``: pick the most plausible)."""

    checked: int  # candidates verified after the first one that passed
    elsewhere: tuple[str, ...] = ()  # other passing candidates that edit other lines: their descriptions
    same_place: tuple[str, ...] = ()  # other passing candidates at the winner's lines
    cut_short: str = ""  # why no more were checked ("time limit", "candidate budget"); "" if not cut
    wanted: int = 0  # how many the configuration asked for (LoopConfig.alternatives)


# Tests of the project's own (failing ones, and passing ones that run the edit) a patch needs for high, unless
# its hypothesis and reproduction test agree on it (``assess_confidence``).
MIN_CONSTRAINING_TESTS = 3


# The highest confidence each reviewer verdict allows: provisional weights, to be fitted on the calibration set
# (issue 33); the one place a fit changes. A verdict is one reason among the others, never the only one for high.
REVIEW_LEVELS: dict[ReviewVerdict, ConfidenceLevel] = {"complete": "high", "partial": "medium", "wrong": "medium"}
REVIEW_TEXTS: dict[ReviewVerdict, str] = {
    "complete": "the reviewer judged the fix complete",
    "partial": "the reviewer judged the fix partial",
    "wrong": "the reviewer judged the fix wrong",
}


def assess_confidence(
    *,
    confirmed: bool,
    patterns: Sequence[Pattern],
    behaviour: BehaviourChange,
    alternatives: Alternatives,
    edited_functions: Sequence[tuple[str, str]],
    ranked_functions: Sequence[tuple[str, str]],
    rejected_static: int = 0,
    agreement: str = "",
    environment_tests: int = 0,
    f2p_tests: int = 0,
    probe: BehaviourEvidence | None = None,
    property_held: str = "",
    review: Review | None = None,
    untested_callers: Sequence[str] = (),
    reproduced_from_error: bool = False,
) -> Confidence:
    """The confidence rule. Every signal is a reason with the highest level it allows; the patch gets the lowest.

    ``low``: not confirmed on the whole suite; any overfitting pattern (but the two ``medium`` ones); the passing
    tests' behaviour changed a lot (``LOW_CHANGED_TESTS`` tests, or over half of those that run the edit and at
    least two).
    ``medium``: coverage missing (behaviour change not measured); any passing test's behaviour changed; no passing
    test runs the edited lines (only the failing tests check the new code); another candidate at other lines
    passed too (the tests do not pin the fix down); alternatives were wanted but none could be checked; the edit
    is not in the function localization ranked first.
    ``high``: none of these. Static sanity needs no reason of its own here: a candidate it refuses is never run.

    ``review``: the reviewer's verdict, one reason at the level ``REVIEW_LEVELS`` gives it: ``complete`` lifts
    nothing, ``partial`` and ``wrong`` cap the patch at medium.

    ``agreement`` (the LLM engines): the hypothesis named the place the patch edits, its own reproduction test
    failed there on the unpatched code and passes on the patch. Then two doubts are weak and cap nothing: the
    edit not being in the function coverage ranked first (coverage also ranks the code that formats a failing
    assertion, or a helper the bug calls), and no passing test running the edited lines (the reproduction test
    is a check of the new code besides the failing tests). Every other doubt still counts.

    ``reproduced_from_error`` (medium): the heal started from a production error, so the only failing test is the
    reproduction QA wrote from the traceback: it shows the error no longer happens, not that what the code now
    does is what the project wants. In the first traceback run (bench/fromerror, 20 real bugs) 4 of the 14
    patches that were otherwise `high` failed the developers' tests or were read partial.

    ``untested_callers`` (medium): functions of the project that call an edited function and that no test ran on
    the unpatched code (``differential.untested_callers``): what the patch now answers them is unchecked. A fix
    that changes a function's contract for its tests can break a caller no test runs (Pencilblue-6, `high` in
    the second BugsJS run: ``isFloat`` made to refuse integers stopped the job runner's progress).

    ``thin_tests`` (medium): without that agreement, fewer than ``MIN_CONSTRAINING_TESTS`` of the project's
    tests run the edited lines (the failing ones and the passing ones that run the edit): one failing and one
    passing example do not tell the fix from an edit that only passes them (held-out small algorithm bugs:
    `and` for `or` in a leap-year rule, `- 1` for `- k + 1`, each passing one failing and one passing test).
    """
    reasons: list[ConfidenceReason] = []

    def reason(code: str, level: ConfidenceLevel, text: str) -> None:
        reasons.append(ConfidenceReason(code=code, level=level, text=text))

    if confirmed:
        reason("confirmed", "high", "the whole suite passed on the patch")
    else:
        reason("unconfirmed", "low", "not confirmed on the whole suite")
    for pattern in patterns:
        reason(f"pattern:{pattern.name}", pattern.level, f"overfitting pattern: the patch {pattern.text}")
    if not patterns:
        reason(
            "no_pattern",
            "high",
            "no known overfitting pattern (deleted guard, raise or return, forced condition, "
            "removed loop, catch-all except, early exit)",
        )
    if rejected_static:
        reason("static_sanity", "high", f"{rejected_static} candidate(s) that cannot make sense were refused untried")
    if not behaviour.measured:
        reason(
            "no_coverage",
            "medium",
            f"how the patch changes what the passing tests execute is unknown: {behaviour.note}",
        )
    else:
        changed = len(behaviour.changed)
        variation = (
            f"; {behaviour.unrelated} that never run the edit ran other lines too (run-to-run variation, left out)"
            if behaviour.unrelated
            else ""
        )
        if changed and (changed >= LOW_CHANGED_TESTS or (changed >= 2 and 2 * changed > behaviour.running_edit)):
            reason(
                "p2p_behaviour_changed",
                "low",
                f"{changed} of {behaviour.compared} passing test(s) execute other "
                f"lines after the patch (first: {behaviour.changed[0]}){variation}",
            )
        elif changed:
            reason(
                "p2p_behaviour_changed",
                "medium",
                f"{changed} of {behaviour.compared} passing test(s) execute "
                f"other lines after the patch ({behaviour.changed[0]}){variation}",
            )
        else:
            reason(
                "p2p_behaviour_unchanged",
                "high",
                f"none of {behaviour.compared} passing test(s) executes other lines after the patch{variation}",
            )
        if behaviour.running_edit == 0 and agreement:
            reason(
                "p2p_not_covering_edit",
                "high",
                "no passing test runs the edited lines, but the hypothesis' own reproduction test checks the new "
                "code besides the failing tests",
            )
        elif behaviour.running_edit == 0:
            reason(
                "p2p_not_covering_edit",
                "medium",
                "no passing test runs the edited lines: only the failing tests check the new code",
            )
        else:
            reason("p2p_covering_edit", "high", f"{behaviour.running_edit} passing test(s) run the edited lines")
    if alternatives.elsewhere:
        first = alternatives.elsewhere[0]
        reason(
            "alternatives_disagree",
            "medium",
            f"{len(alternatives.elsewhere)} other candidate(s) at other lines "
            f"passed too (first: {first}): the tests do not pin the fix down",
        )
    if alternatives.same_place:
        reason(
            "alternatives_same_place",
            "high",
            f"{len(alternatives.same_place)} other edit(s) of the same lines passed too",
        )
    if alternatives.checked == 0 and alternatives.wanted > 0 and alternatives.cut_short:
        reason("alternatives_unchecked", "medium", f"no other candidate could be checked ({alternatives.cut_short})")
    elif not alternatives.elsewhere and alternatives.wanted > 0:
        checked = alternatives.checked
        text = (
            f"{checked} candidate(s) checked after it; none at other lines passed"
            if checked
            else "no other candidate was left to check"
        )
        reason("alternatives_agree", "high", text)
    # (file, qualified name) pairs: the functions the patch edits, and localization's ranking.
    edited = ", ".join(f"`{name}`" for _, name in edited_functions) or "module-level code"
    if agreement:
        reason("hypothesis_agrees", "high", agreement)
    if property_held:
        # Evidence from inputs no test tried; additive for now: the levels get fitted on calibration data.
        reason("property_holds", "high", property_held)
    if behaviour.running_edit and not agreement and f2p_tests + behaviour.running_edit < MIN_CONSTRAINING_TESTS:
        reason(
            "thin_tests",
            "medium",
            f"only {f2p_tests + behaviour.running_edit} of the project's tests run the edited lines "
            f"({f2p_tests} failing, {behaviour.running_edit} passing): too few to tell the fix from an edit that "
            "only passes them",
        )
    if environment_tests:
        reason(
            "environment_tests_left_out",
            "medium",
            f"{environment_tests} failing test(s) were left out as the environment's on the engine's word, and "
            "still fail",
        )
    if not ranked_functions:
        reason("not_localized", "medium", f"edits {edited}; localization ranked no function")
    elif ranked_functions[0] in edited_functions:
        reason("localized", "high", f"edits `{ranked_functions[0][1]}`, the function localization ranked first")
    else:
        rank = next((ranked_functions.index(f) + 1 for f in edited_functions if f in ranked_functions), None)
        where = f"ranked {rank}" if rank else "not ranked"
        top = ranked_functions[0][1]
        if agreement:
            reason(
                "not_localized_agreed",
                "high",
                f"edits {edited} ({where}), not `{top}`, the function ranked first; weak evidence against it: "
                f"{agreement}",
            )
        else:
            reason("not_localized", "medium", f"edits {edited} ({where}), not `{top}`, the function ranked first")
    for code, level, text in probe_reasons(probe):
        reason(code, level, text)
    if untested_callers:
        shown = ", ".join(untested_callers[:3]) + (
            f" and {len(untested_callers) - 3} more" if len(untested_callers) > 3 else ""
        )
        reason(
            "untested_callers",
            "medium",
            f"{len(untested_callers)} function(s) of the project call the edited code and no test runs them "
            f"({shown}): what the patch now answers them is unchecked",
        )
    if reproduced_from_error:
        reason(
            "reproduction_only",
            "medium",
            "the failing test is selfix's own reproduction of a production error (written from its traceback), not "
            "a test of the project's: it shows the error no longer occurs, not that the new result is the intended one",
        )
    if review is not None:
        missed = f" (misses: {review.missed})" if review.missed else ""
        reason(
            f"review_{review.verdict}",
            REVIEW_LEVELS[review.verdict],
            REVIEW_TEXTS[review.verdict] + f": {review.reason}{missed}",
        )
    level = min((r.level for r in reasons), key=lambda lv: CONFIDENCE_ORDER[lv])
    ordered = sorted(reasons, key=lambda r: CONFIDENCE_ORDER[r.level])
    return Confidence(
        level=level,
        reasons=tuple(ordered),
        plausibility=plausibility(patterns),
        alternatives_checked=alternatives.checked,
        alternatives_passed=len(alternatives.elsewhere) + len(alternatives.same_place),
    )


def _shown(change: InputChange) -> str:
    name = change.function.rsplit(":", 1)[-1]
    return f"`{name}{change.input}`: {change.before} -> {change.after}"


# The levels the behaviour probe's findings allow (repair/differential.py). Provisional: to be fitted on the
# calibration set of real bugs (bench/calibration), never on the benchmark the figures are reported on.
PROBE_LEVELS: dict[str, ConfidenceLevel] = {
    "inputs_outside_failed": "medium",
    # A correct fix changes unchecked values of passing tests' calls too when the bug reached them (the examples'
    # bank_account: a test of the history calls withdraw, whose returned balance the fix corrects): shown, and
    # left to the calibration to weigh.
    "inputs_outside_changed": "high",
    "inputs_probed": "high",
    "second_solution_differs": "medium",
    "second_solution_agrees": "high",
    "second_solution_settled": "high",
}


def probe_reasons(probe: BehaviourEvidence | None) -> list[tuple[str, ConfidenceLevel, str]]:
    """What the behaviour probe says of the patch: a call a passing test made that now behaves differently (and
    that no test checks) is evidence against it; so is a second solution that passed the same checks and behaves
    differently on some input (the tests do not pin the fix down). Nothing when the probe compared nothing."""
    if probe is None or not probe.compared:
        return []
    found: list[tuple[str, ConfidenceLevel, str]] = []
    outside = probe.outside
    failed = [c for c in outside if ending(c.before) != ending(c.after)]
    if failed:
        found.append(
            (
                "inputs_outside_failed",
                PROBE_LEVELS["inputs_outside_failed"],
                f"{len(failed)} call(s) that passing tests made now end another way with the patch (raise where they "
                f"returned, or the reverse), and no test checks it (first: {_shown(failed[0])})",
            )
        )
    if len(failed) < len(outside):
        first = next(c for c in outside if c not in failed)
        found.append(
            (
                "inputs_outside_changed",
                PROBE_LEVELS["inputs_outside_changed"],
                f"{len(outside) - len(failed)} call(s) that passing tests made return other values with the patch, "
                f"which those tests do not check (first: {_shown(first)})",
            )
        )
    blind = (
        "; but no call a failing test made changed outcome, so the fix acts through what the probe does not see "
        "(a closure, a callback, module state) and these comparisons say little of it"
        if probe.blind
        else ""
    )
    if not outside:
        found.append(
            (
                "inputs_probed",
                PROBE_LEVELS["inputs_probed"],
                f"{probe.compared} input(s) the tests passed the edited functions, and variations of them, replayed "
                f"unpatched and patched: {len(probe.changed)} changed outcome, none of them a passing test's call"
                + blind,
            )
        )
    if probe.second_source and probe.disagreements and probe.settled:
        found.append(
            (
                "second_solution_settled",
                PROBE_LEVELS["second_solution_settled"],
                f"{probe.second_source} behaves differently on {len(probe.disagreements)} input(s) (first: "
                f"{_shown(probe.disagreements[0])}); {probe.settled}",
            )
        )
    elif probe.second_source and probe.disagreements:
        found.append(
            (
                "second_solution_differs",
                PROBE_LEVELS["second_solution_differs"],
                f"{probe.second_source} passed the same checks and behaves differently on "
                f"{len(probe.disagreements)} input(s) (first: {_shown(probe.disagreements[0])}): the tests do not pin "
                "the fix down",
            )
        )
    elif probe.second_source:
        found.append(
            (
                "second_solution_agrees",
                PROBE_LEVELS["second_solution_agrees"],
                f"{probe.second_source} passed the same checks and behaves the same on all {probe.compared} input(s)"
                + blind,
            )
        )
    return found
