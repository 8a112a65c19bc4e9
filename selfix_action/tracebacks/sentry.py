"""A Sentry payload: an event (as the SDK sends it, or as the API returns it with ``entries``), an issue alert's
webhook (``{"action": "triggered", "data": {"event": ...}}``), or an issue webhook, which carries no stack trace,
only the issue's metadata (its type, value, file and function).

Sentry lists an event's chained exceptions oldest first and each stack trace's frames outermost first, as Python
prints them; the last exception is the one that was raised.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from selfix_action.errors import InputError
from selfix_action.tracebacks.model import ReportedError, ReportedFrame
from selfix_action.tracebacks.text import MAX_FRAMES, MAX_MESSAGE_CHARS

_BUILTIN_MODULES = ("", "builtins", "exceptions", "__builtin__")


def _text(value: object, limit: int = 500) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _event(payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    data = payload.get("data")
    if isinstance(data, Mapping):
        for key in ("event", "error"):  # issue alerts; error webhooks
            if isinstance(data.get(key), Mapping):
                return data[key]
    if any(key in payload for key in ("exception", "entries", "event_id")):
        return payload
    return None


def exception_values(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """An event's exceptions, oldest first, in either layout (the SDK's ``exception``, the API's ``entries``): the
    payload's own objects, not copies."""
    exception = event.get("exception")
    if exception is None:
        for entry in event.get("entries") or ():
            if isinstance(entry, Mapping) and entry.get("type") == "exception":
                exception = entry.get("data")
                break
    if isinstance(exception, Mapping):
        exception = exception.get("values")
    return [v for v in exception or () if isinstance(v, Mapping)] if isinstance(exception, list) else []


MAX_VARIABLES = 20
MAX_VARIABLE_CHARS = 300


def _variables(raw: object) -> tuple[tuple[str, str], ...]:
    """Sentry's ``vars`` of a frame (already reprs, or JSON values): name and text, bounded."""
    if not isinstance(raw, Mapping):
        return ()
    out = []
    for name, value in list(raw.items())[:MAX_VARIABLES]:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        out.append((str(name)[:100], text[:MAX_VARIABLE_CHARS]))
    return tuple(out)


def _frame(raw: Mapping[str, Any]) -> ReportedFrame | None:
    path = _text(raw.get("abs_path")) or _text(raw.get("filename"))
    line = raw.get("lineno")
    if not path or not isinstance(line, int):
        return None
    in_app = raw.get("in_app")
    return ReportedFrame(
        path=path,
        line=line,
        function=_text(raw.get("function"), 200) or "<module>",
        code=_text(raw.get("context_line")).strip(),
        module=_text(raw.get("module"), 200),
        in_app=in_app if isinstance(in_app, bool) else None,
        variables=_variables(raw.get("vars")),
    )


def _type(value: Mapping[str, Any]) -> str:
    name = _text(value.get("type"), 200)
    module = _text(value.get("module"), 200)
    return name if module in _BUILTIN_MODULES else f"{module}.{name}"


def _origin(payload: Mapping[str, Any], event: Mapping[str, Any] | None) -> str:
    data: Mapping[str, Any] = payload["data"] if isinstance(payload.get("data"), Mapping) else {}
    for holder in (event or {}, data.get("issue") or {}, data):
        if isinstance(holder, Mapping):
            for key in ("web_url", "issue_url", "url", "permalink"):
                if _text(holder.get(key)).startswith("https://"):
                    return _text(holder.get(key))
    if event and _text(event.get("event_id")):
        return f"Sentry event {_text(event.get('event_id'), 64)}"
    return "a Sentry payload"


def _from_issue(payload: Mapping[str, Any]) -> ReportedError | None:
    """An issue webhook's metadata: the exception's type and value and its culprit's file and function."""
    data = payload.get("data")
    issue = data.get("issue") if isinstance(data, Mapping) else None
    if not isinstance(issue, Mapping) or not isinstance(issue.get("metadata"), Mapping):
        return None
    metadata = issue["metadata"]
    exc_type = _text(metadata.get("type"), 200)
    path = _text(metadata.get("filename"))
    function = _text(metadata.get("function"), 200)
    if not exc_type or not path:
        return None
    frame = ReportedFrame(path=path, line=0, function=function or "<module>", in_app=True)
    return ReportedError(
        exc_type=exc_type,
        message=_text(metadata.get("value"), MAX_MESSAGE_CHARS),
        frames=(frame,),
        source="sentry",
        origin=_origin(payload, None),
    )


def read_sentry(payload: Mapping[str, Any]) -> ReportedError:
    """The raised exception of a Sentry payload; ``InputError`` when it holds none."""
    event = _event(payload)
    values = exception_values(event) if event is not None else []
    if not values:
        if (issue := _from_issue(payload)) is not None:
            return issue
        raise InputError(
            "the Sentry payload holds no exception: expected an event with exception.values (or entries), an issue "
            "alert ({'data': {'event': ...}}) or an issue with its metadata"
        )
    raised = values[-1]
    stacktrace: Mapping[str, Any] = raised["stacktrace"] if isinstance(raised.get("stacktrace"), Mapping) else {}
    frames = [f for f in (_frame(raw) for raw in stacktrace.get("frames") or () if isinstance(raw, Mapping)) if f]
    if not frames:
        raise InputError("the Sentry event's exception has no stack trace frames with a file and a line")
    chained = tuple(f"{_type(v)}: {_text(v.get('value'))}" if _text(v.get("value")) else _type(v) for v in values[:-1])
    return ReportedError(
        exc_type=_type(raised),
        message=_text(raised.get("value"), MAX_MESSAGE_CHARS),
        frames=tuple(frames[-MAX_FRAMES:]),
        source="sentry",
        origin=_origin(payload, event),
        chained=chained,
    )
