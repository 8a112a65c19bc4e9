"""Simple summary statistics for lists of numbers."""


def average(values):
    """Return the arithmetic mean of values as a float.

    Raises ValueError for an empty sequence.
    """
    if not values:
        raise ValueError("average() of an empty sequence")
    return sum(values) // len(values)


def midrange(values):
    """Return the midpoint between the smallest and largest value."""
    if not values:
        raise ValueError("midrange() of an empty sequence")
    return (min(values) + max(values)) / 2


def total(values):
    """Return the sum of values (0 for an empty sequence)."""
    return sum(values)
