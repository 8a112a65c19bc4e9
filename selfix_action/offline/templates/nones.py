"""Two None slips the condition templates do not cover.

- none_check, a removed `is not None` check: `if self.coupon.active:` where `self.coupon` may be None
  (the fix: `if self.coupon is not None and self.coupon.active:`, or `... is None or ...` for a test
  that escapes), and an unguarded statement using such a value (`mailer.send(msg)` ->
  `if mailer is not None: mailer.send(msg)`; `x = user.name` -> `x = user.name if user is not None
  else None`). The values guarded are the ones attributes, items or methods are taken of; at a
  statement only those that may be None (see `may_be_none`), so it does not flood a line.
  (`condition_narrow` guards a test on its plain names; this one guards on what is dereferenced.)
- none_test, a truthiness test where `is not None` was meant: `if timeout:` -> `if timeout is not None:`
  (0, "" and [] are values too), `if not name:` -> `if name is None:`, and `value or default` ->
  `value if value is not None else default`.
"""

from __future__ import annotations

import ast
import copy
import weakref
from collections.abc import Callable, Iterator

from selfix_action.offline.spans import TextEdit
from selfix_action.offline.templates.analysis import IMPLICIT_NAMES, FileFacts, first_line, is_docstring
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.render import PREC_AND, PREC_NOT
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# they reproduced none of their 331 code hunks, so they have the smoothed floor, below every hand prior.
NONE_CHECK = Template("none_check", 0.099, "restore an `is not None` check before a value is dereferenced")
NONE_TEST = Template("none_test", 0.099, "a truthiness test -> an `is not None` test")

_RECEIVER_CAP = 2  # values guarded per test or statement
_OPERAND_CAP = 3  # operands of one test turned into `is not None` tests
_PREC_IFEXP = 3  # an operand of a conditional expression binds tighter than it
Function = ast.FunctionDef | ast.AsyncFunctionDef
# Per file: the dumps of values the file assigns None to, compares with None, or defaults to None.
_NONE_VALUES: weakref.WeakKeyDictionary[FileFacts, set[str]] = weakref.WeakKeyDictionary()


def _key(node: ast.AST) -> str:
    return ast.dump(node).replace("ctx=Store()", "ctx=Load()")


def _is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _maybe_none_value(node: ast.AST | None) -> bool:
    """An expression that may evaluate to None: `None`, `d.get(k)`, `a if c else None`."""
    if _is_none(node):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return len(node.args) < 2 and not node.keywords
    if isinstance(node, ast.IfExp):
        return _maybe_none_value(node.body) or _maybe_none_value(node.orelse)
    return False


def _none_values(facts: FileFacts) -> set[str]:
    cached = _NONE_VALUES.get(facts)
    if cached is not None:
        return cached
    found: set[str] = set()

    def assigned(stmt: ast.Assign | ast.AnnAssign, none_params: set[str], in_class: bool) -> None:
        value = stmt.value
        optional = isinstance(stmt, ast.AnnAssign) and _optional_annotation(stmt.annotation)
        # `self.x = x` where the enclosing function's `x` defaults to None
        from_param = isinstance(value, ast.Name) and value.id in none_params
        if not (optional or from_param or _maybe_none_value(value)):
            return
        for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
            found.add(_key(target))
            if in_class and isinstance(target, ast.Name):  # a class attribute that defaults to None: on `self` too
                found.add(
                    _key(ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=target.id, ctx=ast.Load()))
                )

    # One walk, each statement with the None-defaulting parameters of its innermost function.
    stack: list[tuple[ast.AST, set[str], bool]] = [(facts.tree, set(), False)]
    while stack:
        node, none_params, in_class = stack.pop()
        if isinstance(node, ast.Assign | ast.AnnAssign):
            assigned(node, none_params, in_class)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Is | ast.IsNot):
            if _is_none(node.comparators[0]):
                found.add(_key(node.left))
        if isinstance(node, Function | ast.Lambda):
            none_params, in_class = _none_parameters(node), False
        elif isinstance(node, ast.ClassDef):
            in_class = True
        elif in_class and not isinstance(node, ast.stmt):
            in_class = False  # only the class body's own statements bind its attributes
        stack.extend((child, none_params, in_class) for child in ast.iter_child_nodes(node))
    _NONE_VALUES[facts] = found
    return found


def _none_parameters(func: Function | ast.Lambda) -> set[str]:
    """The parameters that default to None or are annotated Optional."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    found = {a.arg for a, d in pairs if _is_none(d)}
    every = [*positional, *args.kwonlyargs]
    found |= {a.arg for a in every if a.annotation is not None and _optional_annotation(a.annotation)}
    return found


def _optional_annotation(node: ast.expr) -> bool:
    """`Optional[T]`, `T | None`, `None | T`."""
    if isinstance(node, ast.Subscript):
        base = node.value
        return (isinstance(base, ast.Name) and base.id == "Optional") or (
            isinstance(base, ast.Attribute) and base.attr == "Optional"
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_none(node.left) or _is_none(node.right) or _optional_annotation(node.left)
    return False


def may_be_none(facts: FileFacts, node: ast.expr) -> bool:
    """Does the file say `node` may be None: it is compared with None somewhere, assigned None (or a `.get()`),
    declared Optional, or is a parameter (or the attribute set from a parameter) that defaults to None?"""
    if _key(node) in _none_values(facts):
        return True
    if isinstance(node, ast.Name):
        func = next((s for s in facts.scope_chain(node) if isinstance(s, Function)), None)
        return func is not None and node.id in _none_parameters(func)
    return False


def _guardable(facts: FileFacts, node: ast.expr) -> bool:
    """A plain value that can be tested for None without side effects: a local name or an attribute chain
    rooted in one (`user.profile`, `self.coupon`), not `self` itself or a module."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or (root is node and root.id in IMPLICIT_NAMES):
        return False
    return facts.kind(root.id, facts.scope_chain(node)) == "value"


def receivers(facts: FileFacts, root: ast.AST) -> list[ast.expr]:
    """The values `root` takes an attribute, item or method of, first those that may be None, each once
    (a value already tested against None in `root` is left out)."""
    found: dict[str, ast.expr] = {}
    checked: set[str] = set()
    for sub in ast.walk(root):
        if isinstance(sub, ast.Compare) and any(isinstance(op, ast.Is | ast.IsNot) for op in sub.ops):
            checked.add(_key(sub.left))
        if isinstance(sub, ast.Lambda):
            continue
        if isinstance(sub, ast.Attribute | ast.Subscript) and isinstance(sub.ctx, ast.Load | ast.Store | ast.Del):
            value = sub.value
            if _guardable(facts, value):
                found.setdefault(_key(value), value)
    ordered = [v for k, v in found.items() if k not in checked]
    ordered.sort(key=lambda v: not may_be_none(facts, v))  # stable: walk order within each group
    return ordered


def _is_not_none(value: ast.expr) -> ast.Compare:
    return ast.Compare(left=copy.deepcopy(value), ops=[ast.IsNot()], comparators=[ast.Constant(value=None)])


def _is_none_test(value: ast.expr) -> ast.Compare:
    return ast.Compare(left=copy.deepcopy(value), ops=[ast.Is()], comparators=[ast.Constant(value=None)])


# ----------------------------------------------------------------------------------- none_check
def none_check_test(ctx: Context, node: ast.expr) -> Iterator[Mutation | None]:
    """`T` -> `R is not None and T` and `R is None or T`, for the values `R` the test dereferences; in a
    chain of `and`s (`or`s) the check goes right before the first operand that dereferences `R`."""
    facts, render = ctx.facts, ctx.render
    for value in receivers(facts, node)[:_RECEIVER_CAP]:
        name = render.text(value)
        if "\n" in name or "\r" in name:
            continue
        for op, check, joiner, level in (
            (ast.And, _is_not_none(value), f"{name} is not None and ", PREC_NOT),
            (ast.Or, _is_none_test(value), f"{name} is None or ", PREC_AND),
        ):
            if isinstance(node, ast.BoolOp) and isinstance(node.op, op):
                index = next(i for i, v in enumerate(node.values) if _uses(v, value))
                values = [*node.values[:index], check, *node.values[index:]]
                at = facts.lines.span(node.values[index])[0]
                yield render.replace(
                    NONE_CHECK, node, ast.BoolOp(op=op(), values=values), preferred=[[TextEdit(at, at, joiner)]]
                )
            else:
                new = ast.BoolOp(op=op(), values=[check, node])
                yield render.replace(NONE_CHECK, node, new, f"{joiner}{render.paren(node, level)}")


def _uses(root: ast.AST, value: ast.expr) -> bool:
    wanted = _key(value)
    return any(isinstance(sub, ast.expr) and _key(sub) == wanted for sub in ast.walk(root))


_WRAPPED = (ast.Expr, ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)


def none_check_statement(ctx: Context, stmt: ast.stmt) -> Iterator[Mutation | None]:
    """A statement dereferencing a value that may be None -> the statement under `if R is not None:` (an
    assignment: its value `... if R is not None else None`)."""
    facts, render, lines = ctx.facts, ctx.render, ctx.facts.lines
    if not isinstance(stmt, _WRAPPED) or is_docstring(stmt):
        return
    slot = facts.slot(stmt)
    if slot is None or slot[2] is None:
        return
    parent, field, index = slot[0], slot[1], slot[2]
    guarded = [v for v in receivers(facts, stmt) if may_be_none(facts, v)][:_RECEIVER_CAP]
    if not guarded:
        return
    start, end = lines.span(stmt)
    whole_lines = lines.starts_line(start) and lines.ends_line(end)
    multiline_text = any(
        isinstance(sub, ast.Constant | ast.JoinedStr) and sub.lineno != sub.end_lineno for sub in ast.walk(stmt)
    )
    first, last = first_line(stmt), stmt.end_lineno or stmt.lineno
    indent = lines.indent_of(first)
    unit = _indent_unit(facts, stmt)
    nl = lines.newline
    for value in guarded:
        name = render.text(value)
        if "\n" in name or "\r" in name:
            continue
        assigned = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) else None
        if assigned is not None:
            new_value = ast.IfExp(test=_is_not_none(value), body=assigned, orelse=ast.Constant(value=None))
            text = f"{render.paren(assigned, _PREC_IFEXP)} if {name} is not None else None"
            yield render.replace(NONE_CHECK, assigned, new_value, text)
            continue
        if not whole_lines or multiline_text:
            continue
        at = lines.line_start(first)
        edits = [TextEdit(at, at, f"{indent}if {name} is not None:{nl}{unit}")]
        edits += [TextEdit(lines.line_start(n), lines.line_start(n), unit) for n in range(first + 1, last + 1)]
        guard = ast.If(test=_is_not_none(value), body=[stmt], orelse=[])
        yield Mutation(
            NONE_CHECK,
            [edits],
            _replace_in(getattr(parent, field), index, guard),
            [parent],
            f"put line {stmt.lineno} under `if {name} is not None:`",
        )


def _indent_unit(facts: FileFacts, stmt: ast.stmt) -> str:
    """One level of the file's indentation, from the block the statement is in."""
    lines = facts.lines
    block = next((a for a in facts.ancestors(stmt) if isinstance(a, ast.stmt)), None)
    if block is not None:
        outer, inner = lines.indent_of(block.lineno), lines.indent_of(stmt.lineno)
        if len(inner) > len(outer) and inner.startswith(outer):
            return inner[len(outer) :]
    return "    "


def _replace_in(siblings: list[ast.stmt], index: int, new: ast.stmt) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        old = siblings[index]
        siblings[index] = new

        def undo() -> None:
            siblings[index] = old

        return undo

    return apply


# ------------------------------------------------------------------------------------ none_test
def _testable(facts: FileFacts, node: ast.expr) -> bool:
    """A value whose truthiness may stand for `is not None`: a local name, an attribute, an item, `d.get(k)`."""
    if isinstance(node, ast.Name):
        return node.id not in IMPLICIT_NAMES and facts.kind(node.id, facts.scope_chain(node)) == "value"
    if isinstance(node, ast.Attribute | ast.Subscript):
        return True
    return _maybe_none_value(node) and isinstance(node, ast.Call)


def none_test(ctx: Context, node: ast.expr) -> Iterator[Mutation | None]:
    """In a truth test, `X` -> `X is not None` and `not X` -> `X is None`, for the test or each operand of it."""
    facts, render = ctx.facts, ctx.render
    operands = node.values if isinstance(node, ast.BoolOp) else [node]
    count = 0
    for operand in operands:
        negated = isinstance(operand, ast.UnaryOp) and isinstance(operand.op, ast.Not)
        value = operand.operand if isinstance(operand, ast.UnaryOp) and negated else operand
        if not _testable(facts, value) or count >= _OPERAND_CAP:
            continue
        count += 1
        text = render.text(value)
        if negated:
            yield render.replace(NONE_TEST, operand, _is_none_test(value), f"{text} is None")
        else:
            yield render.replace(NONE_TEST, operand, _is_not_none(value), f"{text} is not None")


def none_default(ctx: Context, node: ast.BoolOp) -> Iterator[Mutation | None]:
    """`X or D` (a value, not a truth test) -> `X if X is not None else D`."""
    facts, render = ctx.facts, ctx.render
    if not isinstance(node.op, ast.Or) or len(node.values) != 2 or _in_test(facts, node):
        return
    value, default = node.values
    if not _testable(facts, value) or isinstance(value, ast.Call):
        return  # a call would run twice
    new = ast.IfExp(test=_is_not_none(value), body=value, orelse=default)
    text = render.text(value)
    yield render.replace(
        NONE_TEST, node, new, f"{text} if {text} is not None else {render.paren(default, _PREC_IFEXP)}"
    )


def _in_test(facts: FileFacts, node: ast.expr) -> bool:
    """Is `node`'s value only used for its truth (the test of an if, while, assert, conditional expression or
    comprehension filter, directly or under `not` / `and` / `or`)?"""
    current: ast.AST = node
    for parent in facts.ancestors(node):
        if isinstance(parent, ast.If | ast.While | ast.Assert | ast.IfExp) and getattr(parent, "test", None) is current:
            return True
        if isinstance(parent, ast.comprehension) and current in parent.ifs:
            return True
        if not (isinstance(parent, ast.BoolOp) or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not))):
            return False
        current = parent
    return False


NONE_CHECK_TEST_FAMILY: Family[ast.expr] = Family("none_check", "test", (ast.expr,), (NONE_CHECK,), none_check_test)
NONE_CHECK_STATEMENT_FAMILY = Family(
    "none_check_statement", "statement", (ast.stmt,), (NONE_CHECK,), none_check_statement
)
NONE_TEST_FAMILY: Family[ast.expr] = Family("none_test", "test", (ast.expr,), (NONE_TEST,), none_test)
NONE_DEFAULT_FAMILY = Family("none_default", "expression", (ast.BoolOp,), (NONE_TEST,), none_default)
