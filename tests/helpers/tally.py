"""A bug no repair template can fix, and the scripted answers that heal it: shared by the LLM tests."""

# The count needs an expression that appears nowhere in the project.
TALLY = {
    "tally.py": "def tally(words):\n    counts = {}\n    for word in words:\n        counts[word] = 1\n"
    "    return counts\n",
    "tests/test_tally.py": "from tally import tally\n\n\ndef test_tally():\n"
    '    assert tally(["a", "a", "b"]) == {"a": 2, "b": 1}\n',
}
DETECTIVE = {
    "hypotheses": [
        {
            "title": "tally sets every count to 1",
            "confidence": 0.9,
            "file": "tally.py",
            "symbol": "tally",
            "line_start": 4,
            "line_end": 4,
            "reasoning": "test_tally expects 2 for a word seen twice",
            "proposed_fix": "counts[word] = counts.get(word, 0) + 1",
        }
    ]
}
QA = {
    "test_source": 'from tally import tally\n\n\ndef test_qa():\n    assert tally(["x", "x"]) == {"x": 2}\n',
    "expected_failure": "AssertionError",
}
FIX = {
    "explanation": "count each occurrence",
    "edits": [{"file": "tally.py", "search": "counts[word] = 1", "replace": "counts[word] = counts.get(word, 0) + 1"}],
}
