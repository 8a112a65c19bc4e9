from range_sum import sum_evens_to, sum_range, sum_to


def test_sum_to_small_values():
    assert sum_to(1) == 1
    assert sum_to(2) == 3
    assert sum_to(3) == 6


def test_sum_to_ten():
    assert sum_to(10) == 55


def test_sum_to_zero_is_zero():
    assert sum_to(0) == 0


def test_sum_to_negative_is_zero():
    assert sum_to(-4) == 0


def test_sum_range_is_half_open():
    assert sum_range(1, 4) == 6
    assert sum_range(3, 6) == 12


def test_sum_range_empty():
    assert sum_range(5, 5) == 0
    assert sum_range(7, 2) == 0


def test_sum_evens_to():
    assert sum_evens_to(6) == 12
    assert sum_evens_to(7) == 12
    assert sum_evens_to(1) == 0
