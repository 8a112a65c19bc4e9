from algo import rle_encode


def test_single_run():
    assert rle_encode("aaa") == [("a", 3)]


def test_two_runs():
    assert rle_encode("aab") == [("a", 2), ("b", 1)]
