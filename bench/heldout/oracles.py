"""Reference implementations of the held-out small algorithm bugs, and the inputs each patch is checked on.

``ORACLES[name] = (function name, reference, inputs)``: a patch is right when the patched function agrees with
the reference on every input (an exception counts as its repr). The bugs and their thin tests were written
before any heal ran; nothing here was tuned to the tool.
"""

import itertools
import math
import random
import statistics
import textwrap

random.seed(0)


def _search_inputs():
    out = []
    for size in range(0, 7):
        items = sorted(random.sample(range(0, 30, 2), size))
        out += [(items, target) for target in range(-1, 31)]
    return out


def _roman(n):
    out = ""
    for value, digits in [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ]:
        while n >= value:
            out += digits
            n -= value
    return out


ROMANS = {_roman(i): i for i in range(1, 4000)}

ORACLES = {
    "binsearch": ("search", lambda a, t: a.index(t) if t in a else -1, _search_inputs()),
    "median": ("median", statistics.median, [(random.sample(range(50), random.randint(1, 8)),) for _ in range(300)]),
    "leapyear": ("is_leap", lambda y: y % 4 == 0 and (y % 100 != 0 or y % 400 == 0), [(y,) for y in range(1800, 2500)]),
    "clamp": (
        "clamp",
        lambda x, lo, hi: max(lo, min(x, hi)),
        [(x, lo, hi) for x in range(-5, 15) for lo in range(-3, 5) for hi in range(lo, 10)],
    ),
    "rle": (
        "rle_encode",
        lambda s: [(k, len(list(g))) for k, g in itertools.groupby(s)],
        [("".join(random.choice("ab") for _ in range(random.randint(0, 8))),) for _ in range(300)],
    ),
    "overlap": (
        "overlaps",
        lambda a, b: max(a[0], b[0]) < min(a[1], b[1]),
        [
            ((a0, a0 + la), (b0, b0 + lb))
            for a0 in range(6)
            for la in range(1, 4)
            for b0 in range(6)
            for lb in range(1, 4)
        ],
    ),
    "wordwrap": (
        "wrap",
        lambda t, w: textwrap.wrap(t, w, break_long_words=False, break_on_hyphens=False),
        [
            (" ".join("x" * random.randint(1, 5) for _ in range(random.randint(0, 6))), random.randint(3, 10))
            for _ in range(500)
        ],
    ),
    "roman": ("from_roman", lambda s: ROMANS[s], [(s,) for s in ROMANS]),
    "lcm": ("lcm", math.lcm, [(a, b) for a in range(0, 40) for b in range(0, 40)]),
    "movavg": (
        "moving_average",
        lambda xs, k: [sum(xs[i : i + k]) / k for i in range(len(xs) - k + 1)],
        [(list(range(n)), k) for n in range(0, 8) for k in range(1, 5)],
    ),
    "fizzbuzz": (
        "label",
        lambda n: "FizzBuzz" if n % 15 == 0 else "Fizz" if n % 3 == 0 else "Buzz" if n % 5 == 0 else str(n),
        [(n,) for n in range(1, 200)],
    ),
    "uniq": (
        "uniq",
        lambda xs: [k for k, _ in itertools.groupby(xs)],
        [([random.choice([1, 2]) for _ in range(random.randint(0, 6))],) for _ in range(300)],
    ),
}


def mismatches(name, algo_dir):
    """Inputs on which ``algo_dir/algo.py``'s function disagrees with the reference (run in its own process)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"heldout_{name}", f"{algo_dir}/algo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function_name, reference, inputs = ORACLES[name]
    function = getattr(module, function_name)
    bad = 0
    for args in inputs:
        try:
            got = function(*args)
        except Exception as exc:  # a crash is a wrong answer
            got = repr(exc)
        bad += got != reference(*args)
    return bad, len(inputs)


if __name__ == "__main__":
    import json
    import sys

    wrong, total = mismatches(sys.argv[1], sys.argv[2])
    print(json.dumps({"mismatches": wrong, "inputs": total}))
