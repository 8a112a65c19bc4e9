"""Summary statistics for benchmark runs: Wilson score interval, exact McNemar test, medians."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


def wilson_interval(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion (0, 0 for no trials)."""
    if trials <= 0:
        return 0.0, 0.0
    if not 0 <= successes <= trials:
        raise ValueError("successes must be within [0, trials]")
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (b: only A resolved, c: only B resolved)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class Paired:
    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float
    shared: int


def paired_comparison(a: Mapping[str, bool], b: Mapping[str, bool]) -> Paired:
    """McNemar on the tasks both runs have a verdict for."""
    shared = sorted(set(a) & set(b))
    both = sum(1 for t in shared if a[t] and b[t])
    only_a = sum(1 for t in shared if a[t] and not b[t])
    only_b = sum(1 for t in shared if b[t] and not a[t])
    neither = len(shared) - both - only_a - only_b
    return Paired(both, only_a, only_b, neither, mcnemar_exact(only_a, only_b), len(shared))


def median(values: Iterable[float]) -> float:
    data = list(values)
    return float(statistics.median(data)) if data else 0.0
