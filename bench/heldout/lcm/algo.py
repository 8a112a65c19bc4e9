def gcd(a, b):
    while b:
        a, b = b, a % b
    return abs(a)


def lcm(a, b):
    """Least common multiple of two positive integers."""
    if a == 0 or b == 0:
        return 0
    return a * b // gcd(a, a)
