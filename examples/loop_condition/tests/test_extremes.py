import pytest

from extremes import largest, smallest, spread


def test_largest_when_maximum_is_last():
    assert largest([1, 2, 3]) == 3


def test_largest_of_two():
    assert largest([4, 8]) == 8


def test_largest_in_the_middle():
    assert largest([3, 9, 2]) == 9
    assert largest([5, 1, 7, 2]) == 7


def test_largest_first():
    assert largest([10, 1, 4, 2]) == 10


def test_largest_single_element():
    assert largest([7]) == 7


def test_largest_negative_numbers():
    assert largest([-3, -1, -2]) == -1


def test_largest_empty_raises():
    with pytest.raises(ValueError):
        largest([])


def test_smallest():
    assert smallest([3, 1, 2]) == 1
    assert smallest([4, 5, 0]) == 0


def test_spread():
    assert spread([3, 10, 1]) == 9
