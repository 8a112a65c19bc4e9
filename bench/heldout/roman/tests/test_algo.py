from algo import from_roman


def test_subtractive():
    assert from_roman("IV") == 4


def test_repeated():
    assert from_roman("III") == 3
