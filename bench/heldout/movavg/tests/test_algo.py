from algo import moving_average


def test_too_short():
    assert moving_average([5], 3) == []


def test_window_two():
    assert moving_average([1, 2, 3, 4], 2) == [1.5, 2.5, 3.5]
