"""The wrong-key template: a string key that names the wrong entry of a mapping (`order["lnies"]` for
`order["lines"]`, `row.get("email")` for `row.get("mail")`, `"nmae" in record`, `{"nmae": ...}`).

The keys tried instead are the ones the file already uses as keys: spelled like the wrong one
first (a typo), then the other keys used on the same mapping (the wrong one of its known keys),
nearest first, then the rest of the file's keys. Any other string literal would be a guess.
"""

from __future__ import annotations

import ast
import difflib
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

from selfix_action.offline.templates.analysis import FileFacts, is_docstring
from selfix_action.offline.templates.family import Context, Family
from selfix_action.offline.templates.values import Mutation, Template

# Learned from 86 real fixes outside the benchmark (bench/realbugs/priors.json, `python -m selfix_bench.priors`):
# it reproduced none of their 331 code hunks, so it has the smoothed floor, below every hand prior.
KEY_REPLACE = Template("key_replace", 0.099, "a string key -> another key the file uses (a typo or the wrong entry)")

_CAP = 5  # keys tried for one wrong key
_SPELLED_CAP = 3  # of which spelled like it
_SPELLING_CUTOFF = 0.7  # difflib ratio: "lnies" ~ "lines", "nmae" ~ "name", "adress" ~ "address"
_KEY_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__", "__contains__"})
_MAX_KEY_LENGTH = 60  # longer literals are messages, not keys


@dataclass
class _Keys:
    """The file's string keys: by the mapping they are used on (its expression's dump), and all of them, with
    the lines they appear on (first use first)."""

    by_base: dict[str, dict[str, int]] = field(default_factory=dict)
    every: dict[str, int] = field(default_factory=dict)


_FILE_KEYS: weakref.WeakKeyDictionary[FileFacts, _Keys] = weakref.WeakKeyDictionary()


def key_site(facts: FileFacts, node: ast.Constant) -> ast.AST | None:
    """The mapping a string constant is a key of (a subscript's value, a `.get`'s object, the right side of
    `in`, or a dict display), or None when the constant is no key."""
    slot = facts.slot(node)
    if slot is None or not isinstance(node.value, str):
        return None
    parent, name, index = slot
    if isinstance(parent, ast.Subscript) and name == "slice":
        return parent.value
    if (
        isinstance(parent, ast.Call)
        and name == "args"
        and index == 0
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr in _KEY_METHODS
    ):
        return parent.func.value
    if isinstance(parent, ast.Compare) and name == "left" and isinstance(parent.ops[0], ast.In | ast.NotIn):
        return parent.comparators[0]
    if isinstance(parent, ast.Dict) and name == "keys":
        return parent
    return None


def _base_key(facts: FileFacts, base: ast.AST) -> str:
    """What identifies a mapping across the file: the name a dict display is assigned to, else the expression."""
    if isinstance(base, ast.Dict):
        slot = facts.slot(base)
        if slot is not None and isinstance(slot[0], ast.Assign) and len(slot[0].targets) == 1:
            base = slot[0].targets[0]
        elif slot is not None and isinstance(slot[0], ast.AnnAssign | ast.AugAssign):
            base = slot[0].target
        else:
            return f"<dict at {id(base)}>"
    dumped = ast.dump(base)
    return dumped.replace("ctx=Store()", "ctx=Load()").replace("ctx=Del()", "ctx=Load()")


def _file_keys(facts: FileFacts) -> _Keys:
    cached = _FILE_KEYS.get(facts)
    if cached is not None:
        return cached
    keys = _Keys()
    for sub in ast.walk(facts.tree):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and 0 < len(sub.value) <= _MAX_KEY_LENGTH:
            base = key_site(facts, sub)
            if base is None:
                continue
            line = sub.lineno
            keys.every.setdefault(sub.value, line)
            keys.by_base.setdefault(_base_key(facts, base), {}).setdefault(sub.value, line)
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "dict":
            # dict(name=...) names its keys as keywords
            for keyword in sub.keywords:
                if keyword.arg is not None:
                    keys.every.setdefault(keyword.arg, sub.lineno)
    _FILE_KEYS[facts] = keys
    return keys


def key_replace(ctx: Context, node: ast.Constant) -> Iterator[Mutation | None]:
    """A key -> the file's keys spelled like it, then the same mapping's other keys, then the file's others."""
    facts = ctx.facts
    value = node.value
    if not isinstance(value, str) or not value or len(value) > _MAX_KEY_LENGTH:
        return
    base = key_site(facts, node)
    stmt = facts.enclosing_stmt(node)
    if base is None or stmt is None or is_docstring(stmt):
        return
    keys = _file_keys(facts)
    line = node.lineno

    def nearest(found: dict[str, int]) -> list[str]:
        return sorted((k for k in found if k != value), key=lambda k: abs(found[k] - line))

    same_base = nearest(keys.by_base.get(_base_key(facts, base), {}))
    others = nearest(keys.every)
    spelled = difflib.get_close_matches(value, others, n=_SPELLED_CAP, cutoff=_SPELLING_CUTOFF)
    if isinstance(base, ast.Dict) and _base_key(facts, base).startswith("<dict"):
        # a display nothing names (returned, passed on): its keys are the reader's, only a typo is likely
        choices = spelled
    else:
        choices = [*spelled, *same_base, *others]
    quote = ctx.render.text(node)[:1]
    for new in list(dict.fromkeys(choices))[:_CAP]:
        yield ctx.render.replace(KEY_REPLACE, node, ast.Constant(value=new), _quoted(new, quote))


def _quoted(value: str, quote: str) -> str:
    """`value` as a literal in the file's quote style where it can be written plainly."""
    if quote in ("'", '"') and value.isprintable() and quote not in value and "\\" not in value:
        return f"{quote}{value}{quote}"
    return repr(value)


KEY_REPLACE_FAMILY = Family("key_replace", "expression", (ast.Constant,), (KEY_REPLACE,), key_replace)
