"""A shopping cart that uses the shop's pricing rules."""

from shop.pricing import apply_discount, line_total


class Cart:
    """A list of (name, unit price, quantity) lines with an optional discount code."""

    def __init__(self):
        self.lines = []
        self.discount_percent = 0

    def add(self, name, unit_price, quantity=1):
        """Add a line to the cart."""
        if unit_price < 0:
            raise ValueError("price cannot be negative")
        self.lines.append((name, unit_price, quantity))

    def subtotal(self):
        """Return the sum of all line totals, before any discount."""
        return round(sum(line_total(p, q) for _, p, q in self.lines), 2)

    def total(self):
        """Return the amount to pay, with the discount applied if one is set."""
        subtotal = self.subtotal()
        if self.discount_percent:
            return apply_discount(subtotal, self.discount_percent)
        return subtotal

    def item_count(self):
        """Return the total number of units in the cart."""
        return sum(q for _, _, q in self.lines)
