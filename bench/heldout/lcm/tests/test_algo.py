from algo import lcm


def test_equal():
    assert lcm(5, 5) == 5


def test_coprime_factors():
    assert lcm(4, 6) == 12
