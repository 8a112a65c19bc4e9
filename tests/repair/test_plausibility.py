"""Overfitting patterns, the change in what passing tests execute, and the confidence rule."""

from __future__ import annotations

import textwrap

import pytest

from selfix_action.repair.plausibility import (
    Alternatives,
    BehaviourChange,
    Pattern,
    assess_confidence,
    behaviour_change,
    overfitting_patterns,
    plausibility,
)

URLJOIN = textwrap.dedent(
    """
    def urljoin(base, url):
        if base is None:
            raise TypeError("base is required")
        if not url:
            return base
        parts = []
        for part in url.split("/"):
            parts.append(part)
        try:
            joined = base + "/" + "/".join(parts)
        except TypeError:
            raise
        return joined
    """
).lstrip()


def patterns_of(old: str, new: str) -> list[str]:
    patched = URLJOIN.replace(old, new)
    assert patched != URLJOIN, old
    return [p.name for p in overfitting_patterns({"u.py": URLJOIN}, {"u.py": patched})]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # urljoin(None, 'a/b') returning 'a/b': the guard deleted
        ('    if base is None:\n        raise TypeError("base is required")\n', "", ["guard_deleted"]),
        ("if base is None:", "if False:", ["condition_constant"]),
        ("if base is None:", "if base is None and False:", ["condition_constant"]),
        ("if not url:", "if not url or True:", ["condition_constant"]),
        ("    except TypeError:\n        raise\n", "    except TypeError:\n        pass\n", ["raise_deleted"]),
        ("    return joined\n", "", ["return_deleted"]),
        (
            '    for part in url.split("/"):\n        parts.append(part)\n',
            "    parts.append(url)\n",
            ["loop_removed"],
        ),
        ("except TypeError:", "except:", ["broad_except"]),
        ("except TypeError:", "except Exception:", ["broad_except"]),
        ("    parts = []\n", "    parts = []\n    return url\n", ["early_exit"]),
    ],
)
def test_each_overfitting_pattern_is_named(old: str, new: str, expected: list[str]) -> None:
    assert patterns_of(old, new) == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("base + ", "base.rstrip('/') + "),  # a real edit of an expression
        ("if not url:", "if url is None:"),  # a guard's condition changed, not forced
        ("    parts = []\n", "    if url is None:\n        return base\n    parts = []\n"),  # a new None guard
        ("    return joined\n", "    return joined.rstrip('/')\n"),
    ],
)
def test_ordinary_edits_show_no_pattern(old: str, new: str) -> None:
    assert patterns_of(old, new) == []


def test_plausibility_multiplies_the_factors() -> None:
    guard = Pattern("guard_deleted", "deletes a guard")
    constant = Pattern("condition_constant", "forces a condition")
    assert plausibility([]) == 1.0
    assert plausibility([guard]) == 0.25
    assert plausibility([guard, constant]) == pytest.approx(0.075)


ORIGINAL = "def f(x):\n    if x > 2:\n        return 1\n    y = x\n    return y\n"
PATCHED = "def f(x):\n    if x > 0:\n        return 1\n    y = x\n    return y\n"


def test_behaviour_change_compares_the_lines_outside_the_edit() -> None:
    before = {
        "t::big": {"f.py": [1, 2, 3]},
        "t::small": {"f.py": [1, 2, 4, 5]},  # now takes the early return: another path
        "t::other": {"g.py": [1]},
    }
    after = {"t::big": {"f.py": [1, 2, 3]}, "t::small": {"f.py": [1, 2, 3]}, "t::other": {"g.py": [1]}}
    change = behaviour_change(before, after, {"f.py": ORIGINAL}, {"f.py": PATCHED}, ["t::big", "t::small", "t::other"])
    assert change.measured and change.compared == 3
    assert change.changed == ("t::small",)
    assert change.running_edit == 2  # both run line 2, the edited one


def test_an_inserted_line_every_test_runs_is_not_a_change_of_path() -> None:
    patched = ORIGINAL.replace("    y = x\n", "    x = abs(x)\n    y = x\n")  # lines after it shift by one
    before = {"t::a": {"f.py": [1, 2, 4, 5]}}
    after = {"t::a": {"f.py": [1, 2, 4, 5, 6]}}
    change = behaviour_change(before, after, {"f.py": ORIGINAL}, {"f.py": patched}, ["t::a"])
    assert change.changed == () and change.running_edit == 1


def test_a_test_that_never_runs_the_edit_is_run_to_run_variation() -> None:
    # boltons' socket tests take another branch now and then; a patch in another function cannot have moved them
    before = {"t::small": {"f.py": [1, 2, 4, 5]}, "t::socket": {"g.py": [1, 2]}}
    after = {"t::small": {"f.py": [1, 2, 3]}, "t::socket": {"g.py": [1, 3]}}
    change = behaviour_change(before, after, {"f.py": ORIGINAL}, {"f.py": PATCHED}, ["t::small", "t::socket"])
    assert change.changed == ("t::small",) and change.unrelated == 1
    unchanged = confidence(behaviour=BehaviourChange(True, 415, (), 3, unrelated=2))
    assert unchanged.level == "high"
    assert any("2 that never run the edit ran other lines too" in r.text for r in unchanged.reasons)


def test_after_a_module_level_edit_every_test_may_change() -> None:
    original = "LIMIT = 2\n\ndef f(x):\n    if x > LIMIT:\n        return 1\n    return 0\n"
    patched = original.replace("LIMIT = 2", "LIMIT = 0")
    before = {"t::a": {"m.py": [4, 6]}}
    after = {"t::a": {"m.py": [4, 5]}}
    change = behaviour_change(before, after, {"m.py": original}, {"m.py": patched}, ["t::a"])
    assert change.changed == ("t::a",) and change.running_edit == 0 and change.unrelated == 0


def test_behaviour_change_without_coverage_is_not_measured() -> None:
    change = behaviour_change(None, {"t": {}}, {}, {}, ["t"])
    assert not change.measured and "before" in change.note


def confidence(**overrides: object):  # type: ignore[no-untyped-def]
    arguments: dict[str, object] = {
        "confirmed": True,
        "patterns": [],
        "behaviour": BehaviourChange(True, compared=5, running_edit=3),
        "alternatives": Alternatives(checked=6, wanted=6),
        "edited_functions": [("f.py", "f")],
        "ranked_functions": [("f.py", "f"), ("f.py", "g")],
    }
    arguments.update(overrides)
    return assess_confidence(**arguments)  # type: ignore[arg-type]


def test_high_needs_every_signal() -> None:
    result = confidence()
    assert result.level == "high"
    assert {r.level for r in result.reasons} == {"high"}
    assert "localized" in {r.code for r in result.reasons}


@pytest.mark.parametrize(
    ("overrides", "level", "code"),
    [
        ({"confirmed": False}, "low", "unconfirmed"),
        ({"patterns": [Pattern("guard_deleted", "deletes a guard")]}, "low", "pattern:guard_deleted"),
        ({"behaviour": BehaviourChange(True, 5, ("a", "b", "c"), 5)}, "low", "p2p_behaviour_changed"),
        ({"behaviour": BehaviourChange(True, 5, ("a", "b"), 3)}, "low", "p2p_behaviour_changed"),
        ({"behaviour": BehaviourChange(True, 9, ("a",), 5)}, "medium", "p2p_behaviour_changed"),
        ({"behaviour": BehaviourChange(False, note="no coverage.py")}, "medium", "no_coverage"),
        ({"behaviour": BehaviourChange(True, 4, (), 0)}, "medium", "p2p_not_covering_edit"),
        ({"alternatives": Alternatives(6, elsewhere=("swap x and y",), wanted=6)}, "medium", "alternatives_disagree"),
        ({"alternatives": Alternatives(0, cut_short="time limit", wanted=6)}, "medium", "alternatives_unchecked"),
        ({"edited_functions": [("f.py", "g")]}, "medium", "not_localized"),
        ({"edited_functions": []}, "medium", "not_localized"),
        ({"untested_callers": ("lib/jobs.js:JobRunner.onUpdate",)}, "medium", "untested_callers"),
    ],
)
def test_each_signal_lowers_the_level_with_a_named_reason(overrides: dict, level: str, code: str) -> None:
    result = confidence(**overrides)
    assert result.level == level
    assert result.reasons[0].code == code and result.reasons[0].level == level  # lowering reasons come first


AGREES = "the hypothesis named f.py:g, its own reproduction test failed there on the unpatched code and passes"


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"edited_functions": [("f.py", "g")]}, "not_localized_agreed"),
        ({"behaviour": BehaviourChange(True, 4, (), 0)}, "p2p_not_covering_edit"),
    ],
)
def test_the_hypothesis_and_its_reproduction_agreeing_make_two_doubts_weak(overrides: dict, code: str) -> None:
    """A patch whose hypothesis, QA test and verification agree: localization ranking another function first,
    or no passing test running the edit, is weak evidence and caps nothing (issue: correct LLM patches, equal to
    the developers' fixes, were medium for these alone)."""
    assert confidence(**overrides).level == "medium"
    agreed = confidence(**overrides, agreement=AGREES)
    assert agreed.level == "high"
    assert {r.code for r in agreed.reasons} >= {code, "hypothesis_agrees"}


@pytest.mark.parametrize(
    "overrides",
    [
        {"behaviour": BehaviourChange(True, 9, ("a",), 5)},
        {"behaviour": BehaviourChange(False, note="no coverage.py")},
        {"alternatives": Alternatives(6, elsewhere=("swap x and y",), wanted=6)},
        {"patterns": [Pattern("guard_deleted", "deletes a guard")]},
        {"confirmed": False},
    ],
)
def test_agreement_leaves_every_other_doubt_standing(overrides: dict) -> None:
    assert confidence(**overrides, agreement=AGREES).level != "high"


def test_same_place_alternatives_do_not_lower_it() -> None:
    result = confidence(alternatives=Alternatives(6, same_place=("range(n + 1)",), wanted=6))
    assert result.level == "high" and result.alternatives_passed == 1


SHOW = (
    "def show(value, unit, verbose):\n"
    "    if value is None or unit is None:\n"
    "        return ''\n"
    "    if verbose:\n"
    "        return 'value: ' + format(value, '.0f')\n"
    "    return format(value, '.0f')\n"
)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # a swapped variable that drops a check
        ("value is None or unit is None", "value is None or value is None", ["read_dropped"]),
        # one of two branches fixed: the other still has the replaced code
        ("'value: ' + format(value, '.0f')", "'value: ' + format(value, '.2f')", ["clone_unchanged"]),
    ],
)
def test_medium_patterns(old: str, new: str, expected: list[str]) -> None:
    patched = SHOW.replace(old, new, 1)
    found = overfitting_patterns({"s.py": SHOW}, {"s.py": patched})
    assert [p.name for p in found] == expected
    assert confidence(patterns=found).level == "medium"


def test_a_dropped_condition_is_medium() -> None:
    # luigi 14: `can_disable` lost its second disjunct; every test passed and selfix had called it high
    original = (
        "class Task:\n"
        "    def can_disable(self):\n"
        "        return (self.disable_failures is not None or\n"
        "                self.disable_hard_timeout is not None)\n"
    )
    patched = original.replace(" or\n                self.disable_hard_timeout is not None", "")
    found = overfitting_patterns({"s.py": original}, {"s.py": patched})
    assert [p.name for p in found] == ["condition_dropped"]
    assert "`self.disable_hard_timeout is not None`" in found[0].text and "`Task.can_disable`" in found[0].text
    assert confidence(patterns=found).level == "medium"
    # an operand replaced, not dropped, is no such pattern
    swapped = original.replace("self.disable_hard_timeout", "self.disable_window")
    assert "condition_dropped" not in [p.name for p in overfitting_patterns({"s.py": original}, {"s.py": swapped})]


def test_an_added_conversion_is_medium() -> None:
    # `str(int_str)` made a string assertion pass and broke floats; `str(base) + "/"` may be a real fix: medium both
    original = "def parse(text):\n    value = text.strip()\n    return value\n"
    patched = original.replace("return value", "return str(int(value))")
    found = overfitting_patterns({"p.py": original}, {"p.py": patched})
    assert [p.name for p in found] == ["coercion_added"]
    assert "`str(int(value))`" in found[0].text and "in `parse`" in found[0].text
    assert confidence(patterns=found).level == "medium"


def test_a_conversion_already_there_is_no_added_coercion() -> None:
    original = "def label(n):\n    return str(n) + ' items'\n"
    patched = original.replace("' items'", "' item(s)'")
    assert overfitting_patterns({"l.py": original}, {"l.py": patched}) == []


def test_both_branches_fixed_is_no_clone() -> None:
    patched = SHOW.replace("'.0f'", "'.2f'")
    assert overfitting_patterns({"s.py": SHOW}, {"s.py": patched}) == []


def test_a_builtin_swapped_for_another_is_no_dropped_read() -> None:
    original = "def cap(percent, limit):\n    percent = max(percent, limit)\n    return percent\n"
    patched = original.replace("max(", "min(")
    assert overfitting_patterns({"p.py": original}, {"p.py": patched}) == []
