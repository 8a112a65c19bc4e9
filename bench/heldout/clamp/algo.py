def clamp(x, lo, hi):
    """Limit x to the closed range [lo, hi]."""
    if lo > hi:
        raise ValueError("lo must not exceed hi")
    if x < lo:
        return lo
    if x > hi:
        return lo
    return x
