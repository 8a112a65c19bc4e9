import pytest

from shop.pricing import apply_discount, line_total


def test_line_total():
    assert line_total(2.5, 4) == 10.0
    assert line_total(0.1, 3) == 0.3


def test_line_total_zero_quantity():
    assert line_total(9.99, 0) == 0


def test_line_total_negative_quantity_rejected():
    with pytest.raises(ValueError):
        line_total(1.0, -1)


def test_apply_discount_at_the_cap():
    assert apply_discount(100, 50) == 50.0
    assert apply_discount(30, 50) == 15.0
