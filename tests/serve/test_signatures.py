"""Signatures over the raw bytes: GitHub's, Sentry's (timestamp within the window) and the generic one (signed
timestamp); each missing, wrong or stale one refused with its reason."""

from __future__ import annotations

import pytest

from selfix_action.serve.signatures import (
    SignatureRefused,
    sign_generic,
    sign_github,
    sign_sentry,
    verify_generic,
    verify_github,
    verify_sentry,
)

SECRET = b"s3cret"
BODY = b'{"action": "completed"}'
NOW = 1_800_000_000.0


def _reason(call: object) -> str:
    assert callable(call)
    with pytest.raises(SignatureRefused) as caught:
        call()
    return caught.value.reason


def test_github_signature() -> None:
    headers = {"x-hub-signature-256": sign_github(SECRET, BODY), "x-github-delivery": "d-1"}
    assert verify_github(headers, BODY, SECRET).identity == "github:d-1"
    assert _reason(lambda: verify_github(headers, BODY + b" ", SECRET)) == "wrong"  # any byte changed
    assert _reason(lambda: verify_github(headers, BODY, b"other")) == "wrong"
    assert _reason(lambda: verify_github({"x-github-delivery": "d-1"}, BODY, SECRET)) == "missing"
    no_prefix = {**headers, "x-hub-signature-256": headers["x-hub-signature-256"][7:]}
    assert _reason(lambda: verify_github(no_prefix, BODY, SECRET)) == "wrong"
    assert _reason(lambda: verify_github({"x-hub-signature-256": headers["x-hub-signature-256"]}, BODY, SECRET)) == (
        "missing"
    )
    assert _reason(lambda: verify_github(headers, BODY, b"")) == "no_secret"  # never "any signature will do"


def test_sentry_signature_and_window() -> None:
    headers = {"sentry-hook-signature": sign_sentry(SECRET, BODY), "sentry-hook-timestamp": str(int(NOW) - 10)}
    verified = verify_sentry(headers, BODY, SECRET, NOW, 300)
    assert verified.identity == f"sentry:{sign_sentry(SECRET, BODY)}"
    assert _reason(lambda: verify_sentry(headers, b"{}", SECRET, NOW, 300)) == "wrong"
    stale = {**headers, "sentry-hook-timestamp": str(int(NOW) - 301)}
    assert _reason(lambda: verify_sentry(stale, BODY, SECRET, NOW, 300)) == "stale"
    future = {**headers, "sentry-hook-timestamp": str(int(NOW) + 301)}
    assert _reason(lambda: verify_sentry(future, BODY, SECRET, NOW, 300)) == "stale"
    junk = {**headers, "sentry-hook-timestamp": "nan"}
    assert _reason(lambda: verify_sentry(junk, BODY, SECRET, NOW, 300)) == "stale"
    assert _reason(lambda: verify_sentry({"sentry-hook-timestamp": "1"}, BODY, SECRET, NOW, 300)) == "missing"


def test_generic_signature_covers_the_timestamp() -> None:
    headers = {k.lower(): v for k, v in sign_generic(SECRET, BODY, int(NOW)).items()}
    assert verify_generic(headers, BODY, SECRET, NOW, 300).identity.startswith("error:")
    redated = {**headers, "x-selfix-timestamp": str(int(NOW) + 1)}  # a replay given a fresh date
    assert _reason(lambda: verify_generic(redated, BODY, SECRET, NOW, 300)) == "wrong"
    old = {k.lower(): v for k, v in sign_generic(SECRET, BODY, int(NOW) - 1000).items()}
    assert _reason(lambda: verify_generic(old, BODY, SECRET, NOW, 300)) == "stale"
    assert _reason(lambda: verify_generic({}, BODY, SECRET, NOW, 300)) == "missing"
