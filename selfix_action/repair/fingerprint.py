"""Failure fingerprints: a stable hash of *what kind of failure* this is, not of the run that saw it.

A fingerprint combines three parts, each normalized so that incidental details do not change it:

- the exception type (``AssertionError``, ``ZeroDivisionError``, ...);
- the message *shape*: the first line of the message with numbers, quoted strings, hex addresses and
  object reprs replaced by placeholders (``assert 1 == 1.5`` and ``assert 3 == 2.5`` share a shape);
- the innermost frame in project code, as ``file:function`` (no line number: an edit above the bug moves it).

Two failures with the same fingerprint are very likely the same bug; ``similarity`` grades partial matches
(same exception and shape elsewhere in the code, or only the same exception) for the memory's retrieval.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict

from selfix_action.repair.values import TestResult

FINGERPRINT_VERSION = 1
MAX_SHAPE_CHARS = 160

_SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>"), "<obj>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"'(?:[^'\\]|\\.)*'"), "<str>"),
    (re.compile(r'"(?:[^"\\]|\\.)*"'), "<str>"),
    (re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])"), "<num>"),
    (re.compile(r"\s+"), " "),
)


class FailureSignature(BaseModel):
    """The normalized parts of one failure and their hash."""

    model_config = ConfigDict(frozen=True)

    exc_type: str
    message_shape: str
    frame: str  # innermost project frame as "file:function", "" when none
    fingerprint: str


def message_shape(message: str) -> str:
    """First non-empty line of ``message`` with literals replaced by placeholders."""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    for pattern, replacement in _SUBSTITUTIONS:
        first = pattern.sub(replacement, first)
    return first.strip()[:MAX_SHAPE_CHARS]


def signature(exc_type: str, message: str, frame: str = "") -> FailureSignature:
    shape = message_shape(message)
    exc = (exc_type or "").strip() or "<none>"
    digest = hashlib.sha256(f"v{FINGERPRINT_VERSION}\0{exc}\0{shape}\0{frame}".encode()).hexdigest()[:16]
    return FailureSignature(exc_type=exc, message_shape=shape, frame=frame, fingerprint=digest)


def failure_signature(result: TestResult) -> FailureSignature:
    """The signature of one failing test: its exception, message shape and innermost project frame."""
    frame = f"{result.frames[-1].file}:{result.frames[-1].function}" if result.frames else ""
    return signature(result.exc_type, result.message, frame)


def fingerprint(result: TestResult) -> str:
    return failure_signature(result).fingerprint


def similarity(a: FailureSignature, b: FailureSignature) -> float:
    """1.0 same fingerprint; 0.7 same exception and message shape; 0.4 same exception and project frame;
    0.25 same exception only; 0.0 otherwise."""
    if a.fingerprint == b.fingerprint:
        return 1.0
    if a.exc_type != b.exc_type:
        return 0.0
    if a.message_shape == b.message_shape:
        return 0.7
    if a.frame and a.frame == b.frame:
        return 0.4
    return 0.25
