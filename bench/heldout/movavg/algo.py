def moving_average(xs, k):
    """Simple moving average with window k (only full windows)."""
    if k <= 0:
        raise ValueError("k must be positive")
    out = []
    for i in range(len(xs) - k):
        out.append(sum(xs[i : i + k]) / k)
    return out
