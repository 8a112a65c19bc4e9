"""Small helpers for summing runs of integers."""


def sum_to(n):
    """Return 1 + 2 + ... + n (inclusive). Returns 0 when n < 1."""
    total = 0
    for i in range(1, n):
        total += i
    return total


def sum_range(start, stop):
    """Return the sum of the half-open range start, start + 1, ..., stop - 1."""
    total = 0
    for i in range(start, stop):
        total += i
    return total


def sum_evens_to(n):
    """Return 2 + 4 + ... up to and including n if n is even."""
    return sum(range(2, n + 1, 2))
