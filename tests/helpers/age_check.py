"""The seed walk-through's scripted model answers for examples/age_check (tests/llm/test_walkthrough.py): four
hypotheses (the top one wrong, two near-duplicates), a QA test for each of the first two, a patch that breaks a
passing test and the right one; and an LLM engine built through the factory against a scripted server."""

from __future__ import annotations

from typing import Any

from selfix_action.llm.factory import build_engine
from tests.helpers.llm_sandbox import TraceLog


def hypothesis(title: str, confidence: float, file: str, symbol: str, lines: tuple[int, int], fix: str) -> dict:
    return {
        "title": title,
        "confidence": confidence,
        "file": file,
        "symbol": symbol,
        "line_start": lines[0],
        "line_end": lines[1],
        "reasoning": f"the ranking and the traceback point at {symbol}",
        "proposed_fix": fix,
    }


def qa(source: str, expected: str = "AssertionError") -> dict:
    return {"test_source": source, "expected_failure": expected}


def edit(file: str, search: str, replace: str, why: str = "fix the comparison") -> dict:
    return {"explanation": why, "edits": [{"file": file, "search": search, "replace": replace}]}


def engine_for(kind: str, url: str, trace: TraceLog, **overrides: Any) -> Any:
    settings: dict[str, Any] = {
        "model": None,
        "base_url": url if kind == "anthropic" else url + "/v1",
        "api_key": "test-key",
        "max_calls": 20,
        "max_tokens": 200_000,
        "max_cost_usd": 5.0,
        "time_limit": 300.0,
        "prices": None,
        "env": {},
        "trace": trace,
        "max_retry_wait": 0.05,
    }
    settings.update(overrides)
    return build_engine(kind, **settings)


AGE_DETECTIVE = {
    "hypotheses": [
        hypothesis(
            "years_until_adult miscounts the years left",
            0.7,
            "age_check.py",
            "years_until_adult",
            (16, 18),
            "return max(0, ADULT_AGE - age) is off by one; add one year",
        ),
        hypothesis(
            "is_adult uses > so an 18-year-old is not an adult",
            0.6,
            "age_check.py",
            "is_adult",
            (6, 13),
            "compare with >= ADULT_AGE",
        ),
        hypothesis(  # a near-duplicate of the one above: merged, not tried twice
            "is_adult uses > so 18 is not an adult",
            0.5,
            "age_check.py",
            "is_adult",
            (13, 13),
            "use >= instead of >",
        ),
        hypothesis(
            "ADULT_AGE constant is wrong",
            0.2,
            "age_check.py",
            "ADULT_AGE",
            (3, 3),
            "set ADULT_AGE to 17",
        ),
    ]
}
QA_WRONG = qa("from age_check import years_until_adult\n\n\ndef test_qa():\n    assert years_until_adult(15) == 3\n")
QA_RIGHT = qa("from age_check import is_adult\n\n\ndef test_qa():\n    assert is_adult(18) is True\n")
PATCH_TOO_WIDE = edit("age_check.py", "    return age > ADULT_AGE\n", "    return age > ADULT_AGE - 1\n")
PATCH_RIGHT = edit("age_check.py", "return age > ADULT_AGE", "return age >= ADULT_AGE")
