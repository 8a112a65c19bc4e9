from word_stats import count_word, most_common, normalize, word_counts


def test_normalize_lowercases():
    assert normalize("Hello,") == "hello"


def test_word_counts_keys_are_lowercase():
    assert word_counts("Cat cat! dog") == {"cat": 2, "dog": 1}


def test_most_common_word():
    assert most_common("The cat and the hat") == "the"


def test_counting_ignores_case():
    assert len(word_counts("The the THE cat")) == 2
    assert sum(word_counts("The the THE cat").values()) == 4


def test_count_word_ignores_case_and_punctuation():
    assert count_word("The cat, the hat. THE END", "the") == 3
    assert count_word('"Hi" hi (HI)', "Hi!") == 3


def test_count_word_missing():
    assert count_word("a b c", "z") == 0


def test_punctuation_only_tokens_are_skipped():
    assert sum(word_counts("wait -- what ?!").values()) == 2


def test_most_common_of_empty_text():
    assert most_common("") is None
    assert word_counts("") == {}
