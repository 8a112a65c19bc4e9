from algo import overlaps


def test_overlapping():
    assert overlaps((0, 5), (3, 8)) is True


def test_touching_is_not_overlap():
    assert overlaps((0, 5), (5, 10)) is False
