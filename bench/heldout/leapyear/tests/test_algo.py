from algo import is_leap


def test_common_year():
    assert is_leap(2023) is False


def test_leap_year():
    assert is_leap(2024) is True
