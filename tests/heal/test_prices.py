"""The price of a model outside the table, as either front end gives it: both halves or neither; a price table
file that is a mapping."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.action.settings import load_settings
from selfix_action.ci.request import heal_request
from selfix_action.cli import main
from selfix_action.errors import InputError
from tests.helpers.projects import copy_example


def test_the_cli_refuses_half_a_price(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = copy_example("range_sum", tmp_path)
    code = main(["fix", str(repo), "--engine", "openai", "--price-per-mtok-in", "1", "--out", str(tmp_path / "o")])
    assert code == 2
    assert "--price-per-mtok-in and --price-per-mtok-out go together" in capsys.readouterr().err


def test_the_action_refuses_half_a_price_and_a_table_that_is_not_a_mapping(tmp_path: Path) -> None:
    base = {"GITHUB_WORKSPACE": str(tmp_path), "INPUT_OPENAI_API_KEY": "sk-x"}
    half = base | {"INPUT_PRICE_PER_MTOK_OUT": "2"}
    with pytest.raises(InputError, match="price_per_mtok_in and price_per_mtok_out go together"):
        heal_request(load_settings(half), half, (), "")
    (tmp_path / "prices.yml").write_text("- not a mapping\n", encoding="utf-8")
    table = base | {"INPUT_PRICES_FILE": "prices.yml"}
    with pytest.raises(InputError, match="must be a mapping of model names to prices"):
        heal_request(load_settings(table), table, (), "")
    outside = base | {"INPUT_PRICES_FILE": "../prices.yml"}
    with pytest.raises(InputError, match="inside the workspace"):
        heal_request(load_settings(outside), outside, (), "")
