from __future__ import annotations

import pytest

from selfix_bench.stats import mcnemar_exact, median, paired_comparison, wilson_interval


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        (8, 10, 0.4902, 0.9433),  # textbook values (Newcombe 1998, Wilson score, no continuity correction)
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
        (1, 2, 0.0945, 0.9055),
    ],
)
def test_wilson_interval_known_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(k, n)
    assert got[0] == pytest.approx(lo, abs=1e-4)
    assert got[1] == pytest.approx(hi, abs=1e-4)


def test_wilson_edge_cases() -> None:
    assert wilson_interval(0, 0) == (0.0, 0.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),
        (3, 3, 1.0),
        (0, 5, 0.0625),  # 2 * (1/2)^5
        (1, 6, 0.125),  # 2 * (1 + 7) / 128
        (2, 10, 0.0386),  # 2 * (1 + 12 + 66) / 4096 = 0.03857
        (10, 2, 0.0386),
    ],
)
def test_mcnemar_exact_known_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-4)


def test_paired_comparison_counts_only_shared_tasks() -> None:
    a = {"t1": True, "t2": True, "t3": False, "t4": False, "only_a": True}
    b = {"t1": True, "t2": False, "t3": True, "t4": False, "only_b": True}
    p = paired_comparison(a, b)
    assert (p.shared, p.both, p.only_a, p.only_b, p.neither) == (4, 1, 1, 1, 1)
    assert p.p_value == 1.0


def test_median() -> None:
    assert median([3, 1, 2]) == 2
    assert median([]) == 0.0
