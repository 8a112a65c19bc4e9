from algo import wrap


def test_breaks_long():
    assert wrap("hello world", 5) == ["hello", "world"]


def test_exact_fit():
    assert wrap("ab cd", 5) == ["ab cd"]
