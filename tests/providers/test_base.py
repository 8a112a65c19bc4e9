"""Retry policy, retry-after parsing and error translation shared by the adapters."""

from __future__ import annotations

import email.utils
import time

import pytest

from selfix_action.errors import SelfixError
from selfix_action.providers.base import (
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    RetryPolicy,
    parse_json_object,
    parse_retry_after,
    status_error,
    with_retries,
)


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": date}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


def test_any_single_wait_is_capped() -> None:
    policy = RetryPolicy(max_retries=3, max_wait=2.0)
    assert policy.wait_for(1, 600.0) == 2.0
    assert policy.wait_for(1, 0.3) == 0.3
    assert all(0 < policy.wait_for(n, None) <= 2.0 for n in range(1, 10))


def test_with_retries_sleeps_capped_and_gives_up() -> None:
    slept: list[float] = []
    attempts = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise status_error(429, "anthropic", "slow down", {"retry-after": "90"})
        return "ok"

    value, notes = with_retries(flaky, RetryPolicy(max_retries=3, max_wait=1.5), slept.append)
    assert value == "ok" and slept == [1.5, 1.5]
    assert [n.requested_wait for n in notes] == [90.0, 90.0]
    assert "capped" in notes[0].describe() and "asked for 90s" in notes[0].describe()

    def always() -> str:
        raise status_error(503, "openai", "unavailable", None)

    with pytest.raises(ModelError) as caught:
        with_retries(always, RetryPolicy(max_retries=2, max_wait=0.0), lambda _: None)
    assert len(caught.value.retries) == 2 and caught.value.status == 503


def test_auth_errors_are_not_retried() -> None:
    calls = []

    def unauthorized() -> str:
        calls.append(1)
        raise status_error(401, "anthropic", "invalid x-api-key", None)

    with pytest.raises(ModelAuthError) as caught:
        with_retries(unauthorized, RetryPolicy(max_retries=5), lambda _: None)
    assert len(calls) == 1
    assert "ANTHROPIC_API_KEY" in str(caught.value) and isinstance(caught.value, SelfixError)


def test_status_translation() -> None:
    assert isinstance(status_error(429, "p", "x", None), ModelRateLimited)
    assert status_error(529, "p", "x", None).retryable and "overloaded" in str(status_error(529, "p", "x", None))
    assert status_error(500, "p", "x", None).retryable
    assert status_error(408, "p", "x", None).retryable
    assert not status_error(400, "p", "x", None).retryable
    assert not status_error(404, "p", "model not found", None).retryable
    assert isinstance(status_error(403, "p", "x", None), ModelAuthError)


def test_parse_json_object() -> None:
    assert parse_json_object('{"a": 1}') == ({"a": 1}, None)
    assert parse_json_object('```json\n{"a": 1}\n```') == ({"a": 1}, None)
    value, error = parse_json_object('{"a": ')
    assert value is None and error is not None and "not valid JSON" in error
    assert parse_json_object("[1]")[1] == "the answer is JSON but not an object (got list)"
    assert parse_json_object("  ")[1] == "the answer was empty"
