"""The priors learned from real fixes: which templates reproduce a fix hunk, the arithmetic of the learned value,
and that the registry carries the values the shipped learning record gives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from selfix_action.errors import InputError
from selfix_action.offline.templates import Hints, registry
from selfix_bench import priors
from selfix_bench.priors import BugResult, HunkResult, code_hunks, learn, reproducing_templates

RECORD = Path(__file__).resolve().parents[2] / "bench" / "realbugs" / "priors.json"

CASES = {
    "none_guard": (
        "def f(x):\n    return x.strip()\n",
        "def f(x):\n    if x is None:\n        return None\n    return x.strip()\n",
        (2,),
    ),
    "unbound_name": (
        "def f(items):\n    total = 0\n    for it in items:\n        total += itm\n    return total\n",
        "def f(items):\n    total = 0\n    for it in items:\n        total += it\n    return total\n",
        (4,),
    ),
    "keyword_add": (
        "def g(a, strict=False):\n    return a\ndef f(x):\n    return g(x)\n",
        "def g(a, strict=False):\n    return a\ndef f(x):\n    return g(x, strict=True)\n",
        (4,),
    ),
    "literal_to_name": (
        "import os\ndef f(p):\n    return p.split(':')\n",
        "import os\ndef f(p):\n    return p.split(os.pathsep)\n",
        (3,),
    ),
    "string_edit": (
        "def f(n):\n    return 'SELECT DISTINCT' + n\n",
        "def f(n):\n    return 'SELECT DISTINCT ' + n\n",
        (2,),
    ),
    "key_replace": (
        "def f(row):\n    row['name'] = 1\n    return row['nmae']\n",
        "def f(row):\n    row['name'] = 1\n    return row['name']\n",
        (3,),
    ),
    "none_check": (
        "def f(user):\n    if user.profile.active:\n        return 1\n",
        "def f(user):\n    if user.profile is not None and user.profile.active:\n        return 1\n",
        (2,),
    ),
    "field_swap": (
        "def f(a, b):\n    return f'{b}-{a}'\n",
        "def f(a, b):\n    return f'{a}-{b}'\n",
        (2,),
    ),
    "none_test": (
        "def f(x):\n    if x:\n        return x\n",
        "def f(x):\n    if x is not None:\n        return x\n",
        (2,),
    ),
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_a_fix_of_the_familys_kind_is_reproduced_by_it(family: str) -> None:
    buggy, fixed, lines = CASES[family]
    [(target, hunk_lines)] = list(code_hunks(buggy, fixed))
    assert target == fixed
    assert set(lines) <= set(hunk_lines)
    assert family in reproducing_templates(buggy, target, "m.py", hunk_lines, Hints())


def test_a_fix_no_template_makes_is_reproduced_by_none() -> None:
    buggy = "def f(x):\n    return x + 1\n"
    fixed = "def f(x):\n    log(x)\n    y = x * 2\n    return y - 1\n"
    [(target, lines)] = list(code_hunks(buggy, fixed))
    assert reproducing_templates(buggy, target, "m.py", lines, Hints()) == ()


def test_hunks_that_change_no_code_are_no_repairs() -> None:
    buggy = "def f(x):\n    # old comment\n    return x\n\n\ndef g(y):\n    return y\n"
    fixed = "def f(x):\n    # a new comment\n    return x\n\n\ndef g(y):\n    return -y\n"
    hunks = list(code_hunks(buggy, fixed))
    assert len(hunks) == 1
    target, lines = hunks[0]
    assert "# old comment" in target and "return -y" in target  # only the code hunk applied
    assert lines == (7,)


def test_an_insertion_is_tried_at_its_neighbours() -> None:
    buggy = "def f(x):\n    y = x\n    return y\n"
    fixed = "def f(x):\n    y = x\n    y = y or 0\n    return y\n"
    [(_, lines)] = list(code_hunks(buggy, fixed))
    assert lines == (2, 3)


def _bug(name: str, *hunks: tuple[str, ...]) -> BugResult:
    return BugResult(name, [HunkResult("m.py", (1,), templates) for templates in hunks])


def test_learned_priors_share_credit_and_keep_the_hand_scale() -> None:
    bugs = [
        _bug("p/1", ("none_guard",)),
        _bug("p/2", ("name_replace", "unbound_name")),  # shared: half a hunk each
        _bug("p/3", ("name_replace",), ("stmt_delete",)),  # a pair of single edits
        *(_bug(f"q/{n}", ()) for n in range(40)),  # fixes no template makes
    ]
    summary = learn(bugs)
    assert summary["hunks"] == 44 and summary["hunks_reproduced"] == 4
    assert summary["bugs_fixed_by_one_template"] == 2 and summary["bugs_fixed_by_a_pair"] == 1
    assert summary["credit"] == {
        "edit_pair": 1,
        "name_replace": 1.5,
        "none_guard": 1,
        "stmt_delete": 1,
        "unbound_name": 0.5,
    }
    assert summary["scale_from"] == ["name_replace", "stmt_delete"]
    share = {t: (summary["credit"].get(t, 0) + priors.SMOOTHING) / 45 for t in registry.PRIORS}
    scale = math.sqrt(
        registry.PRIORS["name_replace"] / share["name_replace"] * registry.PRIORS["stmt_delete"] / share["stmt_delete"]
    )
    assert summary["scale"] == pytest.approx(scale, rel=1e-3)
    assert summary["learned"]["none_guard"] == pytest.approx(min(0.9, scale * share["none_guard"]), abs=1e-3)
    # more credit, higher prior; no credit, the smoothed floor
    assert summary["learned"]["none_guard"] > summary["learned"]["unbound_name"] > summary["learned"]["keyword_add"]
    assert summary["learned"]["keyword_add"] == summary["learned"]["literal_to_name"]


def test_learning_needs_a_credited_hand_family() -> None:
    with pytest.raises(InputError, match="nothing sets the scale"):
        learn([_bug("p/1", ("none_guard",)), _bug("p/2", ())])


def test_the_registry_carries_the_learned_priors_of_the_shipped_record() -> None:
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    assert record["bugs_analysed"].startswith("training")
    # the summary is what the per-bug results give (recomputed without git), and the registry carries it
    assert learn(priors.bugs_of_record(record)) == record["summary"]
    assert set(record["summary"]["learned"]) == {*priors.LEARNED, priors.PAIR}  # every learned family was learned
    for template, value in record["summary"]["learned"].items():
        assert registry.PRIORS[template] == pytest.approx(value), template


def test_the_training_bugs_exclude_the_benchmark_and_the_projects_kept_aside(tmp_path: Path) -> None:
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    benchmark = {
        json.loads(p.read_text(encoding="utf-8"))["meta"]["bugsinpy"] for p in RECORD.parent.glob("tasks/*.json")
    }
    trained = {b["bug"] for b in record["bugs"]}
    assert trained and not trained & benchmark
    assert not {b.split("/")[0] for b in trained} & set(priors.KEPT_ASIDE)
