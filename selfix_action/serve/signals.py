"""What an accepted webhook asks for: a ``Signal`` (a heal, with its fingerprint and the input the heal needs) or
an ``Ignored`` (a valid delivery that asks for nothing: a green run, a comment without ``/selfix``). Pure.

Fingerprints (the dedup key: one heal however often the signal comes):
- ``github:<repo>:run:<run id>``: a ``workflow_run`` completed with ``failure`` or ``timed_out``;
- ``github:<repo>:comment:<comment id>``: a ``/selfix`` comment created on a pull request;
- ``error:<repo>:<fp>``: a Sentry issue alert or a generic error, ``<fp>`` being
  ``selfix_action.tracebacks`` 's fingerprint (exception type and application frames, never line numbers or the
  message). Sentry's own grouping (its issue id, ``fingerprint``) is not used: the same crash reported by Sentry
  and by the generic source is then one heal, and the action's reproducer reads the same fingerprint.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from selfix_action.errors import InputError
from selfix_action.serve.config import ServeConfig
from selfix_action.tracebacks import ReportedError, exception_values, read_error, read_sentry

# GitHub's limit on one workflow_dispatch input's value (and on all of them together).
MAX_DISPATCH_INPUT_CHARS = 65_535
FAILED_CONCLUSIONS = ("failure", "timed_out")
COMMAND_PREFIX = "/selfix"
_SENTRY_PROJECT_URL = re.compile(r"/projects/[^/]+/([^/]+)/")


class BadPayload(Exception):
    """Signed, but not the shape its source sends: answered 400 (or 422 for an unknown project)."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True)
class Signal:
    source: str  # github | sentry | error
    kind: str  # workflow_run | comment | error
    fingerprint: str
    repo: str
    heal: dict[str, Any]  # what the dispatcher needs: ref, description, error, pull, commenter...


@dataclass(frozen=True)
class Ignored:
    reason: str


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BadPayload(f"the body is not JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise BadPayload("the body must be a JSON object")
    return data


def _obj(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise BadPayload(f"{key} must be an object")
    return value


def _str(data: Mapping[str, Any], key: str, limit: int = 500) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise BadPayload(f"{key} must be a string")
    return value[:limit]


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadPayload(f"{key} must be an integer")
    return value


def read_github(event: str, body: bytes, config: ServeConfig) -> Signal | Ignored:
    """A GitHub webhook (``X-GitHub-Event``); ``ping`` and other events are ignored."""
    data = _json_object(body)
    if event not in ("workflow_run", "issue_comment"):
        return Ignored(f"event {event or '(none)'} is not handled")
    repo = _str(_obj(data, "repository"), "full_name", 200)
    action = _str(data, "action", 50)
    if config.repository(repo) is None:
        return Ignored(f"repository {repo} is not configured")
    if event == "workflow_run":
        run = _obj(data, "workflow_run")
        run_id = _int(run, "id")
        conclusion = run.get("conclusion")
        if action != "completed":
            return Ignored(f"workflow_run {action}")
        if conclusion not in FAILED_CONCLUSIONS:
            return Ignored(f"workflow_run concluded {conclusion}")
        branch = _str(run, "head_branch", 250)
        head_repo = run.get("head_repository")
        if isinstance(head_repo, Mapping) and head_repo.get("full_name") not in (None, repo):
            return Ignored("workflow_run of a fork's branch")  # its branch does not exist in this repository
        return Signal(
            source="github",
            kind="workflow_run",
            fingerprint=f"github:{repo}:run:{run_id}",
            repo=repo,
            heal={"ref": branch, "description": f"selfix serve: run {run_id} failed", "run_id": run_id},
        )
    comment = _obj(data, "comment")
    issue = _obj(data, "issue")
    text = _str(comment, "body", MAX_DISPATCH_INPUT_CHARS)
    if action != "created":
        return Ignored(f"issue_comment {action}")
    if "pull_request" not in issue:
        return Ignored("comment on an issue, not a pull request")
    if not text.lstrip().startswith(COMMAND_PREFIX):
        return Ignored("comment is not a /selfix command")
    comment_id = _int(comment, "id")
    user = _obj(comment, "user")
    return Signal(
        source="github",
        kind="comment",
        fingerprint=f"github:{repo}:comment:{comment_id}",
        repo=repo,
        heal={
            "pull": _int(issue, "number"),
            "description": text.strip()[:MAX_DISPATCH_INPUT_CHARS],
            "commenter": _str(user, "login", 100),
        },
    )


def _error_signal(source: str, repo: str, error: ReportedError, text: str, config: ServeConfig) -> Signal:
    configured = config.repository(repo)
    ref = configured.ref if configured is not None else ""
    return Signal(
        source=source,
        kind="error",
        fingerprint=f"error:{repo}:{error.fingerprint}",
        repo=repo,
        heal={"ref": ref, "error": text[:MAX_DISPATCH_INPUT_CHARS], "headline": error.headline()[:300]},
    )


def _compact_sentry(data: Mapping[str, Any]) -> str:
    """The alert as the heal's ``error`` input: the event's exception and where to find it, within GitHub's
    input limit (a whole alert carries breadcrumbs, contexts and request data the heal does not read); the frames'
    variables go first when it is still too long, then the oldest frames."""
    inner = data.get("data") if isinstance(data.get("data"), Mapping) else {}
    assert isinstance(inner, Mapping)
    event = inner.get("event") if isinstance(inner.get("event"), Mapping) else {}
    assert isinstance(event, Mapping)
    keep = ("event_id", "url", "web_url", "issue_url", "culprit", "platform", "exception", "entries")
    compact: dict[str, Any] = {"data": {"event": {k: event[k] for k in keep if k in event}}}
    if "issue" in inner:
        compact["data"]["issue"] = inner["issue"]
    text = json.dumps(compact)
    if len(text) <= MAX_DISPATCH_INPUT_CHARS:
        return text
    for frame in _frames(compact["data"]["event"]):
        frame.pop("vars", None)
    text = json.dumps(compact)
    frames = _frames(compact["data"]["event"])
    while len(text) > MAX_DISPATCH_INPUT_CHARS and len(frames) > 1:
        frames.pop(0)  # outermost first: the frames nearest the raise are kept
        text = json.dumps(compact)
    return text


def _frames(event: Any) -> list[dict[str, Any]]:
    """The raised exception's frames, in place (the SDK's layout or the API's ``entries``)."""
    values = exception_values(event) if isinstance(event, Mapping) else []
    stack = values[-1].get("stacktrace") if values else None
    frames = stack.get("frames") if isinstance(stack, dict) else None
    return frames if isinstance(frames, list) else []


def _sentry_project(data: Mapping[str, Any]) -> str:
    event = data.get("event") if isinstance(data.get("event"), Mapping) else {}
    assert isinstance(event, Mapping)
    for holder in (event, data):
        slug = holder.get("project_slug")
        if isinstance(slug, str) and slug:
            return slug
    url = event.get("url")
    if isinstance(url, str) and (match := _SENTRY_PROJECT_URL.search(url)):
        return match.group(1)
    project = event.get("project")
    return str(project) if isinstance(project, int | str) and not isinstance(project, bool) else ""


def read_sentry_alert(resource: str, body: bytes, config: ServeConfig) -> Signal | Ignored:
    """A Sentry integration webhook (``Sentry-Hook-Resource``): issue alerts (``event_alert``) are heals."""
    data = _json_object(body)
    if resource != "event_alert":
        return Ignored(f"Sentry resource {resource or '(none)'} is not handled")
    inner = _obj(data, "data")
    project = _sentry_project(inner)
    repo = config.repo_of_sentry_project(project) if project else None
    if repo is None:
        raise BadPayload(f"Sentry project {project or '(none)'} is not configured", status=422)
    try:
        error = read_sentry(data)
    except InputError as exc:
        raise BadPayload(f"the alert holds no error: {exc}") from None
    return _error_signal("sentry", repo, error, _compact_sentry(copy.deepcopy(data)), config)


def read_generic(body: bytes, config: ServeConfig) -> Signal:
    """The generic signed error: ``{"repo": "owner/name", "error": "<traceback text or Sentry event JSON>"}``."""
    data = _json_object(body)
    repo = _str(data, "repo", 200)
    error = data.get("error")
    if isinstance(error, Mapping):
        error = json.dumps(error)
    if not isinstance(error, str) or not error.strip():
        raise BadPayload("error must be a traceback's text or a Sentry event")
    if not config.knows(repo):
        raise BadPayload(f"repository {repo} is not configured", status=422)
    try:
        reported = read_error(error)
    except InputError as exc:
        raise BadPayload(f"the error cannot be read: {exc}") from None
    return _error_signal("error", repo, reported, _error_input(error), config)


def _error_input(text: str) -> str:
    """The error as the heal's input, within GitHub's limit: a long traceback keeps its end (the raise and the
    exception), a Sentry event its exception (``_compact_sentry``)."""
    if len(text) <= MAX_DISPATCH_INPUT_CHARS:
        return text
    if text.lstrip().startswith("{"):
        payload = json.loads(text)  # read_error parsed it already
        return _compact_sentry(payload if "data" in payload else {"data": {"event": payload}})
    return text[-MAX_DISPATCH_INPUT_CHARS:]
