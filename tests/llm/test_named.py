"""The project's definitions a hypothesis names beside its places are shown to the Patcher (llm/named.py).

Before: the Patcher read only the hypothesis' locations, so a fix the hypothesis described as "serialize with the
module's own `_DictParamEncoder`" was written with a new encoder (readers reported it on luigi)."""

from __future__ import annotations

import sys
from pathlib import Path

from selfix_action.llm.engine import patcher_code
from selfix_action.llm.named import MAX_NAMED, named_definitions, named_in
from selfix_action.repair.values import Hypothesis
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import write_project

PARAMS = """\
import json


class _DictParamEncoder(json.JSONEncoder):
    def default(self, obj):
        return dict(obj)


class TupleParameter:
    def serialize(self, x):
        return json.dumps(x)

    def parse(self, x):
        return tuple(json.loads(x))


def get_wrapped(value):
    return value


def helper():
    return 1
"""
OTHER = "def helper():\n    return 2\n"
TEST = "from pkg.params import _DictParamEncoder\n\n\ndef test_x():\n    assert _DictParamEncoder\n"
FILES = {"pkg/__init__.py": "", "pkg/params.py": PARAMS, "pkg/other.py": OTHER, "tests/test_params.py": TEST}
HYPOTHESIS = Hypothesis(
    id="H1",
    rank=1,
    title="TupleParameter.serialize loses dicts",
    confidence=0.8,
    file="pkg/params.py",
    symbol="TupleParameter.serialize",
    lines=(10, 11),
    reasoning="serialize calls json.dumps without the module's `_DictParamEncoder`; helper() is unrelated",
    proposed_fix="Use cls=_DictParamEncoder as get_wrapped does, and call `TupleParameter.parse` on the way back",
)


def test_the_names_a_hypothesis_text_uses_are_read_as_code_names() -> None:
    names = named_in(HYPOTHESIS)
    assert names[:2] == ["_DictParamEncoder", "parse"]  # backticked first, the qualified name's last part
    assert {"get_wrapped", "TupleParameter"} <= set(names) and "serialize" not in names and "the" not in names


def test_the_definitions_it_names_are_shown_once_each_bounded_and_never_twice() -> None:
    shown = {"pkg/params.py": set(range(9, 15))}  # the hypothesis' own place: TupleParameter's methods
    found = named_definitions(HYPOTHESIS, FILES, FILES.__getitem__, shown)
    # the encoder (lines 4-6) and get_wrapped (17-18); `parse` is inside the shown lines; `helper` is defined
    # twice in the project (ambiguous: left out); the test file's import is no definition.
    assert found == {"pkg/params.py": {4, 5, 6, 17, 18}}
    many = HYPOTHESIS.model_copy(
        update={"reasoning": "`_DictParamEncoder`, `get_wrapped`, `TupleParameter`, `json_load`"}
    )
    assert (
        len(
            [
                line
                for line in named_definitions(many, FILES, FILES.__getitem__, {}).get("pkg/params.py", ())
                if line in (4, 9, 17)
            ]
        )
        == MAX_NAMED
    )


def test_the_patcher_reads_them_after_the_hypothesis_places(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "repo", FILES)
    with PytestSandbox(repo, [sys.executable, "-m", "pytest"], scratch_parent=tmp_path) as sandbox:
        shown, code = patcher_code(HYPOTHESIS, sandbox)
    places, _, named = code.partition("The project's definitions the hypothesis names, beside those places:")
    assert "def serialize(self, x):" in places and "class _DictParamEncoder" not in places
    assert "class _DictParamEncoder(json.JSONEncoder):" in named and "def get_wrapped(value):" in named
    assert {4, 17} <= shown["pkg/params.py"]  # later attempts' implicated code does not repeat them
