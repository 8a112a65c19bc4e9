"""The order in which the offline engine tries a hypothesis' candidates: features of each candidate and its
evidence, a learned linear score over them, and the sort key the engine uses.

Order (most likely first), for every engine configuration:

1. the line's suspiciousness (better-localized lines first; nothing reorders across it);
2. the memory's boost for this template at this hypothesis (``learn.memory``): it reorders candidates of one
   line, or of lines localized exactly as well, never ahead of a better-localized line;
3. the candidate's score: the learned model (``candidate_order.json`` shipped next to this module, fitted by
   ``python -m selfix_bench.learning``) or, when that file is absent or of an unknown version, the hand
   prior shared among the template's variants on the line (``prior / k``);
4. the line's rank in the hypothesis, then the generation order.

The model is a logistic regression over sparse named features. A template id the model has never seen (a new
template family) contributes no template term: its score comes from the prior-based features alone
(``log_weight``, ``log_prior``), i.e. it falls back to its prior inside the model's scale.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from selfix_action.offline.templates.render import SourceEdit
from selfix_action.repair.values import Evidence, Hypothesis

ORDER_MODEL_VERSION = 1
ORDER_MODEL_KIND = "candidate_order_logistic"
MODEL_PATH = Path(__file__).with_name("candidate_order.json")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LITERAL = re.compile(r"""-?\d+(?:\.\d+)?|'[^']*'|"[^"]*\"""")
_OPERATOR = re.compile(r"^\s*(?:[-+*/%@&|^<>=!~]+|\bnot\b|\band\b|\bor\b|\bis\b|\bin\b|\bis not\b|\bnot in\b)\s*$")
_KEYWORDS = frozenset({"not", "and", "or", "is", "in", "None", "True", "False", "lambda", "if", "else", "for"})
MAX_MESSAGE_CHARS = 4000
_OPERATOR_CHARS = frozenset("-+*/%@&|^<>=!~")


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


@dataclass(frozen=True)
class FailureContext:
    """What the failing tests said, once per heal: the exception type and the messages' text and words."""

    exc_type: str
    text: str
    words: frozenset[str]
    frame_lines: frozenset[tuple[str, int]]

    @classmethod
    def of(cls, evidence: Evidence) -> FailureContext:
        failures = evidence.failures
        text = "\n".join(f.message for f in failures[:5])[:MAX_MESSAGE_CHARS]
        frames = frozenset((fr.file, fr.line) for f in failures for fr in f.frames)
        return cls(
            exc_type=(failures[0].exc_type or "<none>") if failures else "<none>",
            text=text,
            words=frozenset(_IDENT.findall(text)),
            frame_lines=frames,
        )


@dataclass
class FileIndex:
    """The original file's lines and its AST nodes by first line, to name what an edit changes."""

    lines: list[str]
    nodes_by_line: dict[int, list[ast.AST]] = field(default_factory=dict)

    @classmethod
    def of(cls, source: str) -> FileIndex:
        index = cls(lines=source.splitlines(keepends=True))
        try:
            tree = ast.parse(source.lstrip("\ufeff"))
        except (SyntaxError, ValueError):
            return index
        for node in ast.walk(tree):
            if hasattr(node, "lineno") and hasattr(node, "end_lineno") and not isinstance(node, ast.expr_context):
                index.nodes_by_line.setdefault(node.lineno, []).append(node)
        return index

    def node_kind(self, line: int, col: int, end_line: int, end_col: int) -> str:
        """The AST type of the smallest original node covering [line:col, end_line:end_col]."""
        best: ast.AST | None = None
        best_size = math.inf
        for start in range(max(1, line - 40), line + 1):
            for node in self.nodes_by_line.get(start, ()):
                n_line, n_col = node.lineno, node.col_offset  # type: ignore[attr-defined]
                e_line, e_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
                if e_line is None or e_col is None:
                    continue
                if (n_line, n_col) <= (line, col) and (e_line, e_col) >= (end_line, end_col):
                    size = (e_line - n_line) * 1000 + (e_col - n_col)
                    if size < best_size:
                        best, best_size = node, size
        return type(best).__name__ if best is not None else "Module"


def changed_segments(index: FileIndex, edit: SourceEdit) -> tuple[str, str, int, int, int, int]:
    """(old text, new text, start line, start col, end line, end col) of what ``edit`` changes, from the
    common prefix and suffix of the two files (the edit is identical to the original outside its span)."""
    old = index.lines
    new = edit.new_source.splitlines(keepends=True)
    start = max(0, min(edit.line - 1, len(old), len(new)))
    while start > 0 and (start > len(old) or start > len(new) or old[start - 1] != new[start - 1]):
        start -= 1
    while start < len(old) and start < len(new) and old[start] == new[start]:
        start += 1
    # The shortest changed block whose remainders match (list comparisons run in C: most edits change 1 line).
    delta = len(new) - len(old)
    tail = 0
    for n_old in range(max(0, -delta), len(old) - start + 1):
        if old[start + n_old :] == new[start + n_old + delta :]:
            tail = len(old) - start - n_old
            break
    old_block = "".join(old[start : len(old) - tail])
    new_block = "".join(new[start : len(new) - tail])
    prefix = 0
    limit = min(len(old_block), len(new_block))
    while prefix < limit and old_block[prefix] == new_block[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old_block[-1 - suffix] == new_block[-1 - suffix]:
        suffix += 1

    # Whole tokens: `len` -> `min`, not `le` -> `mi`; `//` -> `/`, not a deleted `/`.
    def same_class(a: str, b: str) -> bool:
        return (_is_word(a) and _is_word(b)) or (a in _OPERATOR_CHARS and b in _OPERATOR_CHARS)

    while prefix > 0 and (
        same_class(old_block[prefix - 1], old_block[prefix : prefix + 1] or new_block[prefix : prefix + 1] or " ")
        or same_class(old_block[prefix - 1], new_block[prefix : prefix + 1] or " ")
    ):
        prefix -= 1
    while suffix > 0 and (
        same_class(old_block[-suffix], old_block[-suffix - 1 : len(old_block) - suffix] or " ")
        or same_class(old_block[-suffix], new_block[-suffix - 1 : len(new_block) - suffix] or " ")
    ):
        suffix -= 1
    old_seg = old_block[prefix : len(old_block) - suffix]
    new_seg = new_block[prefix : len(new_block) - suffix]
    before = old_block[:prefix]
    s_line = start + 1 + before.count("\n")
    s_col = len(before) - (before.rfind("\n") + 1)
    through = old_block[: len(old_block) - suffix]
    e_line = start + 1 + through.count("\n")
    e_col = len(through) - (through.rfind("\n") + 1)
    return old_seg, new_seg, s_line, s_col, e_line, e_col


def _token(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip())[:12]


def candidate_features(
    edit: SourceEdit,
    index: FileIndex,
    failure: FailureContext,
    *,
    hypothesis: Hypothesis,
    line_order: int,
    score: float,
    top_score: float,
    fan_out: int,
) -> dict[str, float]:
    """Sparse named features of one candidate, known before it is tried (no outcome leaks in)."""
    old_seg, new_seg, s_line, s_col, e_line, e_col = changed_segments(index, edit)
    kind = index.node_kind(s_line, s_col, e_line, e_col)
    introduced = set(_IDENT.findall(new_seg)) - set(_IDENT.findall(old_seg)) - _KEYWORDS
    removed = set(_IDENT.findall(old_seg)) - set(_IDENT.findall(new_seg)) - _KEYWORDS
    literals = [lit.strip("'\"") for lit in _LITERAL.findall(new_seg)]
    top_line = hypothesis.lines[0] if hypothesis.lines else edit.line
    prior = max(edit.prior, 1e-6)
    feats: dict[str, float] = {
        f"tpl:{edit.template}": 1.0,
        f"kind:{kind}": 1.0,
        f"exc:{failure.exc_type}": 1.0,
        f"tpl_exc:{edit.template}|{failure.exc_type}": 1.0,
        f"tpl_kind:{edit.template}|{kind}": 1.0,
        "log_weight": math.log(prior / max(1, fan_out)),
        "log_prior": math.log(prior),
        "log_fan_out": math.log(max(1, fan_out)),
        "distance": math.log1p(abs(edit.line - top_line)),
        "line_order": math.log1p(line_order),
        "suspiciousness": score / top_score if top_score > 0 else 0.0,
        "top_line": float(score >= top_score),
        "in_traceback": float((hypothesis.file, edit.line) in failure.frame_lines),
        "introduces_name_in_message": float(bool(introduced & failure.words)),
        "removes_name_in_message": float(bool(removed & failure.words)),
        "literal_in_message": float(any(lit and lit in failure.text for lit in literals)),
        "message_compares": float("==" in failure.text or "!=" in failure.text),
        "change_size": math.log1p(len(old_seg) + len(new_seg)),
        "pure_insert": float(not old_seg.strip()),
        "pure_delete": float(not new_seg.strip()),
    }
    if _OPERATOR.match(old_seg) and _OPERATOR.match(new_seg):
        feats[f"op:{_token(old_seg)}>{_token(new_seg)}"] = 1.0
    return feats


class OrderModel:
    """A fitted linear score over sparse features (see ``learn.ranker``), read from its JSON file."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        if data.get("version") != ORDER_MODEL_VERSION or data.get("kind") != ORDER_MODEL_KIND:
            raise ValueError(f"unknown candidate-order model (version {data.get('version')!r}, {data.get('kind')!r})")
        self.weights: dict[str, float] = {str(k): float(v) for k, v in data["weights"].items()}
        self.bias = float(data.get("bias", 0.0))
        self.mean: dict[str, float] = {str(k): float(v) for k, v in data.get("mean", {}).items()}
        self.std: dict[str, float] = {str(k): float(v) or 1.0 for k, v in data.get("std", {}).items()}
        self.templates: frozenset[str] = frozenset(data.get("templates", ()))
        self.data = dict(data)

    def score(self, feats: Mapping[str, float]) -> float:
        """The model's log-odds that this candidate is the fix. Numeric features are standardized with the
        training means (``candidate_features`` always gives every numeric one); a one-hot the model never saw
        adds nothing."""
        z = self.bias
        for name, value in feats.items():
            weight = self.weights.get(name)
            if weight is None:
                continue
            if name in self.mean:
                value = (value - self.mean[name]) / self.std.get(name, 1.0)
            z += weight * value
        return z


def load_order_model(path: Path = MODEL_PATH) -> OrderModel | None:
    """The shipped model, or None (the hand priors) when the file is absent, unreadable or of another version."""
    try:
        return OrderModel(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@lru_cache(maxsize=1)
def shipped_order_model() -> OrderModel | None:
    return load_order_model(MODEL_PATH)


@dataclass
class RankedCandidate:
    """One candidate with what ordering needs: where it is, how suspicious that is, and its features."""

    edit: SourceEdit
    line: int
    line_order: int
    suspiciousness: float
    fan_out: int
    features: dict[str, float]
    generated: int  # position in generation order

    @property
    def prior_weight(self) -> float:
        return self.edit.prior / max(1, self.fan_out)


def order_key(
    item: RankedCandidate,
    boost: Mapping[str, float],
    model: OrderModel | None,
    *,
    boost_first: bool = False,
) -> tuple[float, ...]:
    """The sort key (ascending) of the order described in the module docstring. ``boost_first`` is the old
    order (memory boosts ahead of suspiciousness), kept only so the evaluation can measure it."""
    score = model.score(item.features) if model is not None else item.prior_weight
    boosted = boost.get(item.edit.template, 0.0)
    if boost_first:
        return (-boosted, -item.suspiciousness, -score, item.line_order, item.generated)
    return (-item.suspiciousness, -boosted, -score, item.line_order, item.generated)


def ordered(
    items: Sequence[RankedCandidate],
    boost: Mapping[str, float],
    model: OrderModel | None,
    *,
    boost_first: bool = False,
) -> list[RankedCandidate]:
    return sorted(items, key=lambda item: order_key(item, boost, model, boost_first=boost_first))
