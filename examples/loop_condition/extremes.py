"""Find the extremes of a list with explicit loops."""


def largest(values):
    """Return the largest value in a non-empty list."""
    if not values:
        raise ValueError("largest() of an empty list")
    best = values[0]
    i = 1
    while i < len(values) - 1:
        if values[i] > best:
            best = values[i]
        i += 1
    return best


def smallest(values):
    """Return the smallest value in a non-empty list."""
    if not values:
        raise ValueError("smallest() of an empty list")
    best = values[0]
    for value in values[1:]:
        if value < best:
            best = value
    return best


def spread(values):
    """Return largest(values) - smallest(values)."""
    return largest(values) - smallest(values)
