"""Case-insensitive word statistics for short texts."""

import string


def normalize(word):
    """Return word in lowercase with surrounding punctuation removed."""
    return word.strip(string.punctuation).upper()


def word_counts(text):
    """Return a dict mapping each normalized word in text to its count."""
    counts = {}
    for raw in text.split():
        word = normalize(raw)
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts


def count_word(text, word):
    """Return how many times word occurs in text, ignoring case and punctuation."""
    return word_counts(text).get(normalize(word), 0)


def most_common(text):
    """Return the most frequent normalized word (earliest wins ties), or None."""
    counts = word_counts(text)
    if not counts:
        return None
    return max(counts, key=counts.get)
