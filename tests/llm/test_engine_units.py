"""LLM engine pieces that need no server: near-duplicate merging and QA test checks."""

from __future__ import annotations

from selfix_action.llm.engine import merge_near_duplicates, qa_source_problem
from selfix_action.llm.schemas import DetectiveAnswer, HypothesisAnswer, inline_schema


def answer(title: str, symbol: str, confidence: float, fix: str = "use >=", file: str = "a.py") -> HypothesisAnswer:
    return HypothesisAnswer(
        title=title,
        confidence=confidence,
        file=file,
        symbol=symbol,
        line_start=3,
        line_end=4,
        reasoning="r",
        proposed_fix=fix,
    )


def test_near_duplicates_merge_into_the_more_confident() -> None:
    merged = merge_near_duplicates(
        [
            answer("is_adult uses > instead of >=", "is_adult", 0.4),
            answer("is_adult uses > not >=", "age.is_adult()", 0.8, fix="compare with >="),
            answer("ADULT_AGE is wrong", "ADULT_AGE", 0.3, fix="set 17"),
            answer("is_adult rejects negative ages wrongly", "is_adult", 0.2, fix="drop the ValueError check"),
            answer("is_adult uses > instead of >=", "is_adult", 0.5, file="b.py"),
        ]
    )
    assert [(m.symbol, m.confidence) for m in merged] == [
        ("age.is_adult()", 0.8),
        ("ADULT_AGE", 0.3),
        ("is_adult", 0.2),
        ("is_adult", 0.5),
    ]
    assert "merged with a near-duplicate: is_adult uses > instead of >=" in merged[0].reasoning


def test_qa_source_checks() -> None:
    assert qa_source_problem("from a import f\n\ndef test_f():\n    assert f() == 1\n") is None
    assert "does not parse" in (qa_source_problem("def test_f(:\n    pass\n") or "")
    assert "no test function" in (qa_source_problem("def check():\n    assert True\n") or "")
    assert "conftest" in (qa_source_problem("from conftest import x\n\ndef test_f():\n    pass\n") or "")


def test_schemas_have_no_refs() -> None:
    schema = inline_schema(DetectiveAnswer)
    assert "$ref" not in str(schema) and "$defs" not in schema
    assert "title" in schema["properties"]["hypotheses"]["items"]["properties"]
