import pytest

from age_check import is_adult, signup_message, years_until_adult


def test_eighteen_is_adult():
    assert is_adult(18) is True


def test_signup_on_eighteenth_birthday():
    assert signup_message("Ana", 18) == "Welcome, Ana!"


def test_seventeen_is_not_adult():
    assert is_adult(17) is False


def test_almost_eighteen_is_not_adult():
    assert is_adult(17.5) is False


def test_older_people_are_adults():
    assert is_adult(19) is True
    assert is_adult(65) is True


def test_child_is_not_adult():
    assert is_adult(0) is False


def test_negative_age_rejected():
    with pytest.raises(ValueError):
        is_adult(-1)


def test_years_until_adult():
    assert years_until_adult(15) == 3
    assert years_until_adult(18) == 0
    assert years_until_adult(40) == 0


def test_signup_message_for_minor():
    assert signup_message("Bo", 16) == "Sorry Bo, come back in 2 year(s)."
