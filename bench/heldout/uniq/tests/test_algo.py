from algo import uniq


def test_distinct():
    assert uniq([1, 2, 3]) == [1, 2, 3]


def test_collapses():
    assert uniq([1, 1, 2]) == [1, 2]
