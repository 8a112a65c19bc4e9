import pytest

from averages import average, midrange, total


def test_average_of_two_odd_total():
    assert average([1, 2]) == 1.5


def test_average_of_grades():
    assert average([90, 85, 82]) == pytest.approx(85.6666667)


def test_average_of_even_split():
    assert average([2, 4, 6]) == 4


def test_average_single_value():
    assert average([7]) == 7


def test_average_negative_values():
    assert average([-2, -4]) == -3


def test_average_empty_raises():
    with pytest.raises(ValueError):
        average([])


def test_midrange():
    assert midrange([1, 2]) == 1.5
    assert midrange([3, 9, 5]) == 6


def test_total():
    assert total([1, 2, 3]) == 6
    assert total([]) == 0
