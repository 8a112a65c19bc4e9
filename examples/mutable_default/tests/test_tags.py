from tags import add_tag, format_tags, remove_tag


def test_calls_without_list_do_not_share_state():
    first = add_tag("python")
    second = add_tag("testing")
    assert first == ["python"]
    assert second == ["testing"]


def test_each_default_list_is_new():
    assert add_tag("a") is not add_tag("b")


def test_add_to_given_list_in_place():
    tags = ["x"]
    result = add_tag("y", tags)
    assert result is tags
    assert tags == ["x", "y"]


def test_add_to_given_empty_list_in_place():
    tags = []
    add_tag("  PyThOn ", tags)
    assert tags == ["python"]


def test_add_ignores_duplicates():
    tags = ["python"]
    add_tag("Python", tags)
    assert tags == ["python"]


def test_remove_tag():
    assert remove_tag("B", ["a", "b"]) == ["a"]
    assert remove_tag("z", ["a"]) == ["a"]


def test_format_tags():
    assert format_tags(add_tag("beta", ["alpha"])) == "alpha, beta"
