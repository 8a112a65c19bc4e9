import pytest

from inventory import Inventory


def make_inventory():
    inv = Inventory()
    inv.add("apples", 5)
    inv.add("pears", 12)
    inv.add("plums", 2)
    return inv


def test_five_units_need_restock():
    assert make_inventory().needs_restock("apples") is True


def test_restock_list_includes_items_at_threshold():
    assert make_inventory().restock_list() == ["apples", "plums"]


def test_units_until_restock():
    assert make_inventory().units_until_restock("pears") == 7


def test_units_until_restock_for_low_items_is_zero():
    inv = make_inventory()
    assert inv.units_until_restock("plums") == 0
    assert inv.units_until_restock("kiwis") == 0


def test_well_stocked_item_does_not_need_restock():
    assert make_inventory().needs_restock("pears") is False


def test_six_units_do_not_need_restock():
    inv = Inventory()
    inv.add("figs", 6)
    assert inv.needs_restock("figs") is False


def test_low_and_unknown_items_need_restock():
    inv = make_inventory()
    assert inv.needs_restock("plums") is True
    assert inv.needs_restock("kiwis") is True


def test_add_accumulates():
    inv = make_inventory()
    inv.add("pears", 3)
    assert inv.stock["pears"] == 15


def test_add_rejects_non_positive():
    with pytest.raises(ValueError):
        Inventory().add("apples", 0)


def test_remove():
    inv = make_inventory()
    inv.remove("pears", 10)
    assert inv.stock["pears"] == 2
    assert inv.needs_restock("pears") is True


def test_remove_too_many_raises():
    with pytest.raises(ValueError):
        make_inventory().remove("plums", 3)
