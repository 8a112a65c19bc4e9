"""A production error as a value: a Python traceback (text, as a log or crash report holds it) or a Sentry event
or issue-alert payload (JSON), read into ``ReportedError``.

Pure: no I/O, no project access. Which frames are the project's is decided later, against a checkout
(``project_frames``); here a frame only carries what the report said (``in_app`` when Sentry said). The text is
untrusted: it is parsed, bounded and never evaluated.
"""

from __future__ import annotations

from selfix_action.tracebacks.model import ReportedError, ReportedFrame, fingerprint
from selfix_action.tracebacks.read import MAX_ERROR_BYTES, read_error
from selfix_action.tracebacks.sentry import exception_values, read_sentry
from selfix_action.tracebacks.text import read_traceback

__all__ = [
    "MAX_ERROR_BYTES",
    "ReportedError",
    "ReportedFrame",
    "exception_values",
    "fingerprint",
    "read_error",
    "read_sentry",
    "read_traceback",
]
