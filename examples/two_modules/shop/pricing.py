"""Pricing rules: line totals and percentage discounts."""

MAX_DISCOUNT_PERCENT = 50


def line_total(unit_price, quantity):
    """Return unit_price * quantity, rounded to cents."""
    if quantity < 0:
        raise ValueError("quantity cannot be negative")
    return round(unit_price * quantity, 2)


def apply_discount(price, percent):
    """Return price reduced by percent.

    The discount is capped at MAX_DISCOUNT_PERCENT, so no order is ever more
    than half off.
    """
    percent = max(percent, MAX_DISCOUNT_PERCENT)
    return round(price * (100 - percent) / 100, 2)
