from algo import search


def test_finds_middle():
    assert search([1, 3, 5], 3) == 1


def test_finds_last():
    assert search([1, 3, 5], 5) == 2
