"""The project's definitions a hypothesis names beside its places, for the Patcher to read.

A hypothesis often says "serialize with the module's own ``_DictParamEncoder``" or "as ``get_wrapped`` does",
naming a helper that is not one of its locations. Shown only its locations, the Patcher (readers reported it) wrote
its own encoder instead of the project's, or guessed at a helper's behaviour: a patch further from the
developers' and less likely right. So the names a hypothesis' text uses that are defined in the project, exactly
once, are shown too: bounded, and never a place already shown.

Pure: the project's files come in through ``read_file``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from selfix_action.llm.asks import Definition, definitions
from selfix_action.repair.paths import is_test_path
from selfix_action.repair.values import Hypothesis

MAX_NAMED = 3  # definitions shown per hypothesis
MAX_NAMED_LINES = 40  # of one definition: its head and the start of its body

# What reads as a code name in prose: `anything in backticks`, a snake_case or _private name, a CamelCase name.
_BACKTICKED = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`")
_CODE_LIKE = re.compile(r"\b(_+[A-Za-z]\w*|[A-Za-z]+_\w+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b")


def named_in(hypothesis: Hypothesis) -> list[str]:
    """The code names the hypothesis' title, reasoning and proposed fix use, first seen first."""
    text = " ".join((hypothesis.title, hypothesis.reasoning, hypothesis.proposed_fix))
    names = [m.group(1).rsplit(".", 1)[-1] for m in _BACKTICKED.finditer(text)]
    names += [m.group(1) for m in _CODE_LIKE.finditer(text)]
    return list(dict.fromkeys(name for name in names if len(name) > 2))


def named_definitions(
    hypothesis: Hypothesis,
    source_files: Iterable[str],
    read_file: Callable[[str], str],
    shown: Mapping[str, set[int]],
) -> dict[str, set[int]]:
    """Lines to show of the project definitions ``hypothesis`` names (each defined exactly once among the
    project's source files, not a test's) that ``shown`` does not already hold."""
    by_name: dict[str, list[Definition]] = {}
    for path in source_files:
        if not path.endswith(".py") or is_test_path(path):
            continue
        try:
            text = read_file(path)
        except (OSError, UnicodeDecodeError):
            continue
        for found in definitions(path, text):
            if found.kind != "assignment":
                by_name.setdefault(found.qualname.rsplit(".", 1)[-1], []).append(found)
    wanted: dict[str, set[int]] = {}
    taken = 0
    for name in named_in(hypothesis):
        matches = by_name.get(name, [])
        if len(matches) != 1:
            continue  # unknown here, or ambiguous: not worth the tokens
        found = matches[0]
        lines = set(range(found.start, min(found.end, found.start + MAX_NAMED_LINES - 1) + 1))
        if lines & (shown.get(found.path, set()) | wanted.get(found.path, set())):
            continue  # shown already, in part (a class around the method the hypothesis names)
        wanted.setdefault(found.path, set()).update(lines)
        taken += 1
        if taken == MAX_NAMED:
            break
    return wanted
