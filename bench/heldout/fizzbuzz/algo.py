def label(n):
    """FizzBuzz label for a positive integer."""
    if n % 10 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)


def sequence(limit):
    return [label(i) for i in range(1, limit + 1)]
