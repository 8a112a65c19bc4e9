import pytest

from shop.cart import Cart


def make_cart():
    cart = Cart()
    cart.add("pen", 1.5, 4)
    cart.add("notebook", 4.0)
    return cart


def test_total_with_ten_percent_discount():
    cart = make_cart()
    cart.discount_percent = 10
    assert cart.total() == 9.0


def test_discount_is_capped_at_half_price():
    cart = make_cart()
    cart.discount_percent = 80
    assert cart.total() == 5.0


def test_total_with_half_price_discount():
    cart = make_cart()
    cart.discount_percent = 50
    assert cart.total() == 5.0


def test_total_without_discount():
    assert make_cart().total() == 10.0


def test_subtotal():
    assert make_cart().subtotal() == 10.0
    assert Cart().subtotal() == 0


def test_item_count():
    assert make_cart().item_count() == 5


def test_negative_price_rejected():
    with pytest.raises(ValueError):
        Cart().add("broken", -1)
