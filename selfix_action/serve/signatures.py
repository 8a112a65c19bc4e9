"""Webhook signatures, checked over the raw body before anything parses it. Pure: the clock is passed in.

- GitHub: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>``; replays are told by
  ``X-GitHub-Delivery`` (GitHub's signature covers no timestamp).
- Sentry: ``Sentry-Hook-Signature: <hex HMAC-SHA256(client secret, body)>`` and ``Sentry-Hook-Timestamp`` within
  the replay window (Sentry signs the body only, so the timestamp bounds a replay and the digest identifies one).
- Generic: ``X-Selfix-Timestamp: <unix seconds>`` and ``X-Selfix-Signature: sha256=<hex HMAC(secret,
  f"{ts}." + body)>``: the timestamp is signed, so an old request cannot be re-dated.

Every comparison is ``hmac.compare_digest``; a source without its secret refuses everything.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

GITHUB_SIGNATURE = "x-hub-signature-256"
GITHUB_DELIVERY = "x-github-delivery"
SENTRY_SIGNATURE = "sentry-hook-signature"
SENTRY_TIMESTAMP = "sentry-hook-timestamp"
SELFIX_SIGNATURE = "x-selfix-signature"
SELFIX_TIMESTAMP = "x-selfix-timestamp"


class SignatureRefused(Exception):
    """The request is not provably from the source: answered 401 and stored nowhere."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason  # a short label for logs and metrics: missing, wrong, stale, no_secret


@dataclass(frozen=True)
class Verified:
    identity: str  # the delivery's identity for replay detection, unique per source
    digest: str  # hex SHA-256 of the body


def _hmac(secret: bytes, message: bytes) -> str:
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _equal(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode("ascii"), given.encode("ascii", "replace"))


def _timestamp(text: str, now: float, window: float) -> float:
    try:
        stamp = float(text)
    except ValueError:
        raise SignatureRefused("stale") from None
    if stamp != stamp or abs(now - stamp) > window:  # NaN, or outside the window either way
        raise SignatureRefused("stale")
    return stamp


def verify_github(headers: Mapping[str, str], body: bytes, secret: bytes) -> Verified:
    if not secret:
        raise SignatureRefused("no_secret")
    given = headers.get(GITHUB_SIGNATURE, "")
    if not given:
        raise SignatureRefused("missing")
    if not _equal("sha256=" + _hmac(secret, body), given):
        raise SignatureRefused("wrong")
    delivery = headers.get(GITHUB_DELIVERY, "").strip()
    if not delivery or len(delivery) > 100:
        raise SignatureRefused("missing")  # signed, but without the id replays are told by
    return Verified(identity=f"github:{delivery}", digest=hashlib.sha256(body).hexdigest())


def verify_sentry(headers: Mapping[str, str], body: bytes, secret: bytes, now: float, window: float) -> Verified:
    if not secret:
        raise SignatureRefused("no_secret")
    given = headers.get(SENTRY_SIGNATURE, "")
    stamp = headers.get(SENTRY_TIMESTAMP, "")
    if not given or not stamp:
        raise SignatureRefused("missing")
    expected = _hmac(secret, body)
    if not _equal(expected, given):
        raise SignatureRefused("wrong")
    _timestamp(stamp, now, window)
    return Verified(identity=f"sentry:{expected}", digest=hashlib.sha256(body).hexdigest())


def verify_generic(headers: Mapping[str, str], body: bytes, secret: bytes, now: float, window: float) -> Verified:
    if not secret:
        raise SignatureRefused("no_secret")
    given = headers.get(SELFIX_SIGNATURE, "")
    stamp = headers.get(SELFIX_TIMESTAMP, "")
    if not given or not stamp:
        raise SignatureRefused("missing")
    expected = "sha256=" + _hmac(secret, stamp.encode("ascii", "replace") + b"." + body)
    if not _equal(expected, given):
        raise SignatureRefused("wrong")
    _timestamp(stamp, now, window)
    return Verified(identity=f"error:{expected[7:]}", digest=hashlib.sha256(body).hexdigest())


def sign_github(secret: bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends (for clients and tests)."""
    return "sha256=" + _hmac(secret, body)


def sign_sentry(secret: bytes, body: bytes) -> str:
    return _hmac(secret, body)


def sign_generic(secret: bytes, body: bytes, timestamp: int) -> dict[str, str]:
    """The two headers a sender of the generic source sets."""
    stamp = str(timestamp)
    return {
        "X-Selfix-Timestamp": stamp,
        "X-Selfix-Signature": "sha256=" + _hmac(secret, stamp.encode("ascii") + b"." + body),
    }
