def median(xs):
    """Median of a non-empty list of numbers."""
    s = sorted(xs)
    n = len(s)
    if n % 2 == 1:
        return s[n // 2]
    return (s[n // 2] + s[n // 2 + 1]) / 2
