"""A reported error handed to a front end: a file (``selfix fix --from-error FILE``, the action's ``from_error``
input, ``-`` for standard input) or the text itself (a ``workflow_dispatch`` input ``error``), read into a
``ReportedError`` (``tracebacks.read_error``). Bounded, decoded leniently, and refused with a clear error."""

from __future__ import annotations

import sys
from pathlib import Path

from selfix_action.errors import InputError
from selfix_action.tracebacks import MAX_ERROR_BYTES, ReportedError, read_error


def read_error_text(text: str, *, origin: str) -> ReportedError:
    if not text.strip():
        raise InputError(f"the error report ({origin}) is empty")
    return read_error(text, origin=origin)


def read_error_file(path: str) -> ReportedError:
    """``path`` ("-": standard input) as a traceback or a Sentry payload."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_ERROR_BYTES + 1)
        origin = "the error report on standard input"
    else:
        file = Path(path)
        if not file.is_file():
            raise InputError(f"--from-error: no such file: {path}")
        try:
            with file.open("rb") as handle:
                data = handle.read(MAX_ERROR_BYTES + 1)
        except OSError as exc:
            raise InputError(f"--from-error: cannot read {path}: {exc}") from exc
        origin = f"the error report {file.name}"
    if len(data) > MAX_ERROR_BYTES:
        raise InputError(f"the error report is larger than {MAX_ERROR_BYTES // (1024 * 1024)} MiB")
    return read_error_text(data.decode("utf-8", errors="replace"), origin=origin)
