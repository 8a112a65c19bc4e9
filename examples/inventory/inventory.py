"""Stock tracking for a small shop."""

# Items with this many units or fewer must be reordered.
RESTOCK_THRESHOLD = 4


class Inventory:
    """Track units in stock per item name.

    Items with 5 units or fewer need restocking.
    """

    def __init__(self):
        self.stock = {}

    def add(self, name, quantity):
        """Add quantity units of name."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.stock[name] = self.stock.get(name, 0) + quantity

    def remove(self, name, quantity):
        """Remove quantity units of name; raise ValueError if not enough are in stock."""
        if quantity > self.stock.get(name, 0):
            raise ValueError(f"not enough {name} in stock")
        self.stock[name] -= quantity

    def needs_restock(self, name):
        """Return True if name has RESTOCK_THRESHOLD units or fewer."""
        return self.stock.get(name, 0) <= RESTOCK_THRESHOLD

    def units_until_restock(self, name):
        """Return how many units of name are in stock above the restock threshold."""
        return max(0, self.stock.get(name, 0) - RESTOCK_THRESHOLD)

    def restock_list(self):
        """Return the sorted names of all items that need restocking."""
        return sorted(name for name in self.stock if self.needs_restock(name))
