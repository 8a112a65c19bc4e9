"""``python -m selfix_bench.family_ranks``: the fix's rank with and without template families, on the fixture
tasks; the process-wide candidate pipeline is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.offline.templates import candidates as pipeline
from selfix_action.offline.templates import registry
from selfix_bench import family_ranks

TASKS = Path(__file__).parent / "fixtures" / "tasks"


def test_leaving_out_the_fixing_families_loses_the_fixes_and_restores_the_pipeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = pipeline.EXPRESSION_FAMILIES, pipeline.STATEMENT_FAMILIES

    assert family_ranks.main(["--tasks", str(TASKS), "--without", "name_replace", "compare_replace"]) == 0

    out = capsys.readouterr().out
    assert "tasks: 2; the fix among the bug line's candidates: 0 without, 2 with" in out
    assert "tiny-clamp-name: rank None of" in out and "tiny-count_above-compare: rank None of" in out
    assert (pipeline.EXPRESSION_FAMILIES, pipeline.STATEMENT_FAMILIES) == before
    assert pipeline.EXPRESSION_FAMILIES == registry.EXPRESSION_FAMILIES


def test_leaving_out_nothing_changes_no_rank(capsys: pytest.CaptureFixture[str]) -> None:
    assert family_ranks.main(["--tasks", str(TASKS), "--without"]) == 0

    out = capsys.readouterr().out
    assert "the fix among the bug line's candidates: 2 without, 2 with" in out
    assert "later for 0, earlier for 0" in out


def test_an_unknown_family_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        family_ranks.main(["--tasks", str(TASKS), "--without", "no_such_family"])

    assert exit_info.value.code == 2
    assert "unknown template families: no_such_family" in capsys.readouterr().err
