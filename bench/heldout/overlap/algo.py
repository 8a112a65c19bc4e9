def overlaps(a, b):
    """True if the half-open intervals a=[a0, a1) and b=[b0, b1) share a point."""
    a_start, a_end = a
    b_start, b_end = b
    return a_start < b_end and b_start <= a_end


def total_overlap(a, b):
    if not overlaps(a, b):
        return 0
    return min(a[1], b[1]) - max(a[0], b[0])
