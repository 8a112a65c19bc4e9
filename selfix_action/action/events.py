"""What triggered this run, read from the event payload into one small typed value.

Triggers: ``workflow_run`` (a failed run of another workflow), ``issue_comment`` with a ``/selfix`` command on a
pull request, ``workflow_dispatch`` (inputs ``ref`` and ``description``, and ``error``: a production error to
heal), and a plain step after a failed test step in the same job (any other event). Payload fields are untrusted
text; only typed values leave this module.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from selfix_action.action.settings import Settings
from selfix_action.ci.gitops import AUTHOR_EMAIL, BRANCH_PREFIX, carries_trailer
from selfix_action.errors import InputError
from selfix_action.tracebacks import MAX_ERROR_BYTES

MAX_EVENT_BYTES = 25 * 1024 * 1024
MAX_HINT_CHARS = 2000
_COMMAND = re.compile(r"^\s*/selfix(?:\s+(?P<verb>[A-Za-z-]+))?(?P<rest>.*)$", re.DOTALL)


class Command(StrEnum):
    FIX = "fix"
    RETRY = "retry"
    EXPLAIN = "explain"
    HELP = "help"


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class WorkflowRunTrigger:
    run_id: int
    head_sha: str
    head_branch: str
    head_repo: str
    pull_numbers: tuple[int, ...]  # same-repository PRs GitHub attached to the run (empty for forks)
    workflow_id: int | None = None  # the failed workflow, dispatched again on a fix branch

    @property
    def name(self) -> str:
        return "workflow_run"


@dataclass(frozen=True)
class CommentTrigger:
    command: Command
    text: str  # free text after the verb, for the Detective
    comment_id: int
    pull_number: int
    login: str
    user_type: str  # "User" or "Bot"

    @property
    def name(self) -> str:
        return "issue_comment"


@dataclass(frozen=True)
class DispatchTrigger:
    ref: str
    description: str
    # A production error to heal (input ``error``: a traceback or a Sentry payload, as ``selfix serve`` sends it);
    # "" for a heal of the branch's failing tests. ``signal``: the server's fingerprint of it, for the log.
    error: str = ""
    signal: str = ""

    @property
    def name(self) -> str:
        return "workflow_dispatch"


@dataclass(frozen=True)
class StepTrigger:
    """A step with ``if: failure()`` after the test step: heal the checkout as it is, from local JUnit files."""

    branch: str
    sha: str

    @property
    def name(self) -> str:
        return "step"


Trigger = WorkflowRunTrigger | CommentTrigger | DispatchTrigger | StepTrigger


def load_payload(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        if path.stat().st_size > MAX_EVENT_BYTES:
            raise InputError(f"event payload {path} is too large")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the event payload {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"event payload {path} is not a JSON object")
    return data


def parse_command(body: str) -> tuple[Command, str] | None:
    """``/selfix <verb> [text]`` on the first non-empty line; None when the comment is not for us."""
    stripped = body.lstrip()
    if not stripped.lower().startswith("/selfix"):
        return None
    first, _, more = stripped.partition("\n")
    match = _COMMAND.match(first)
    if match is None or (first[len("/selfix") :][:1] not in ("", " ", "\t", "\r")):
        return None
    verb = (match.group("verb") or "help").lower()
    try:
        command = Command(verb)
    except ValueError:
        return Command.HELP, ""
    text = (match.group("rest").strip() + "\n" + more).strip()
    return command, text[:MAX_HINT_CHARS]


def _str(data: Any, *keys: str) -> str:
    for key in keys:
        if not isinstance(data, dict):
            return ""
        data = data.get(key)
    return data if isinstance(data, str) else ""


def _selfix_commit(commit: Any) -> str:
    """Why a webhook's ``head_commit`` is a commit selfix made (its author or committer email, or its fingerprint
    trailer), else "": healing the run of selfix's own push would loop (a fix for the fix, and so on)."""
    if not isinstance(commit, dict):
        return ""
    for role in ("author", "committer"):
        if _str(commit, role, "email").lower() == AUTHOR_EMAIL:
            return f"its {role} is selfix ({AUTHOR_EMAIL})"
    if carries_trailer(_str(commit, "message")):
        return "its message carries selfix's fingerprint trailer"
    return ""


def _labels(item: Any) -> tuple[str, ...]:
    labels = item.get("labels") if isinstance(item, dict) else None
    return tuple(_str(label, "name") for label in labels or () if isinstance(label, dict))


def parse_event(settings: Settings, payload: dict[str, Any]) -> Trigger | Skip:
    event = settings.event_name
    if event == "workflow_run":
        run = payload.get("workflow_run")
        if not isinstance(run, dict):
            raise InputError("workflow_run event without a workflow_run object")
        conclusion = run.get("conclusion")
        if payload.get("action") != "completed" or conclusion != "failure":
            return Skip(f"the workflow run concluded {conclusion or 'nothing yet'}, not failure")
        if _str(run, "head_branch").startswith(BRANCH_PREFIX):
            # CI that selfix dispatched on its own fix branch: its result belongs to the fix PR, not a new heal.
            return Skip(f"the failed run is on selfix's own fix branch {_str(run, 'head_branch')!r}")
        own = _selfix_commit(run.get("head_commit"))
        if own:
            # A commit-mode fix pushed with a token that starts workflows: its run is selfix's own push.
            return Skip(f"the failed run is of commit {_str(run, 'head_sha')[:12]}, which selfix pushed: {own}")
        workflow_id = run.get("workflow_id")
        pulls = tuple(
            int(p["number"])
            for p in run.get("pull_requests") or ()
            if isinstance(p, dict) and isinstance(p.get("number"), int)
        )
        return WorkflowRunTrigger(
            run_id=int(run["id"]),
            head_sha=_str(run, "head_sha"),
            head_branch=_str(run, "head_branch"),
            head_repo=_str(run, "head_repository", "full_name"),
            pull_numbers=pulls,
            workflow_id=workflow_id if isinstance(workflow_id, int) else None,
        )
    if event == "issue_comment":
        if payload.get("action") != "created":
            return Skip("only newly created comments are commands (edits are ignored)")
        issue = payload.get("issue") or {}
        comment = payload.get("comment") or {}
        parsed = parse_command(_str(comment, "body"))
        if parsed is None:
            return Skip("the comment is not a /selfix command")
        if not isinstance(issue.get("pull_request"), dict):
            return Skip("/selfix commands work on pull requests, not issues")
        if settings.opt_out_label in _labels(issue):
            return Skip(f"pull request #{issue.get('number')} has the {settings.opt_out_label!r} label (opt_out_label)")
        return CommentTrigger(
            command=parsed[0],
            text=parsed[1],
            comment_id=int(comment["id"]),
            pull_number=int(issue["number"]),
            login=_str(comment, "user", "login"),
            user_type=_str(comment, "user", "type"),
        )
    if event == "workflow_dispatch":
        inputs = payload.get("inputs") or {}
        ref = _str(inputs, "ref") or _str(payload, "ref") or settings.ref_name
        return DispatchTrigger(
            ref=ref,
            description=_str(inputs, "description")[:MAX_HINT_CHARS],
            error=_str(inputs, "error")[:MAX_ERROR_BYTES],
            signal=_str(inputs, "signal")[:100],
        )
    own = _selfix_commit(payload.get("head_commit")) if event == "push" else ""
    if own:
        return Skip(f"the pushed commit {_str(payload, 'after')[:12]} is selfix's own: {own}")
    branch = settings.head_ref or settings.ref_name
    if branch.startswith(BRANCH_PREFIX):
        return Skip(f"the failed tests ran on selfix's own fix branch {branch!r}")
    return StepTrigger(branch=branch, sha=settings.sha)
