"""``read_error``: a traceback text or a Sentry JSON payload, told apart by their first character."""

from __future__ import annotations

import json
from dataclasses import replace

from selfix_action.errors import InputError
from selfix_action.tracebacks.model import ReportedError
from selfix_action.tracebacks.sentry import read_sentry
from selfix_action.tracebacks.text import read_traceback

# A crash log or an event payload is kilobytes; a Sentry event with every frame's variables can reach a megabyte.
MAX_ERROR_BYTES = 2 * 1024 * 1024


def read_error(text: str, *, origin: str = "") -> ReportedError:
    """A reported error: Sentry's JSON (an object) or a Python traceback (any other text). ``origin`` names where
    it came from when the payload does not (a file name)."""
    if len(text.encode("utf-8", "replace")) > MAX_ERROR_BYTES:
        raise InputError(f"the error report is larger than {MAX_ERROR_BYTES // (1024 * 1024)} MiB")
    if text.lstrip().startswith("{"):
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"the error report looks like JSON but is not valid JSON: {exc}") from exc
        if not isinstance(payload, dict):
            raise InputError("the error report's JSON must be an object (a Sentry event or webhook payload)")
        try:
            error = read_sentry(payload)
        except InputError:
            # A structured log record ({"level": "error", "exc_info": "Traceback ..."}) carries the text itself.
            logged = _traceback_text(payload)
            if logged is None:
                raise
            error = read_traceback(logged)
            return _with_origin(error, origin) if origin else error
        return error if error.origin or not origin else _with_origin(error, origin)
    error = read_traceback(text)
    return _with_origin(error, origin) if origin else error


def _traceback_text(value: object, depth: int = 0) -> str | None:
    """The first string in a JSON value that holds a Python traceback (a log record's ``exc_info``)."""
    if isinstance(value, str):
        return value if "Traceback (most recent call last):" in value else None
    if depth < 8 and isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            if (found := _traceback_text(item, depth + 1)) is not None:
                return found
    return None


def _with_origin(error: ReportedError, origin: str) -> ReportedError:
    return replace(error, origin=origin)
