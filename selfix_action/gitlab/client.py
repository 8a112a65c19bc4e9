"""``GitLabClient``: every GitLab REST v4 call selfix makes, over python-gitlab, returning plain dataclasses.

Retries are python-gitlab's own (``retry_transient_errors``: 500/502/503/504 and connection errors with
exponential backoff; ``obey_rate_limit``: 429 after its ``Retry-After``), bounded by ``max_retries`` on every call.
Creating calls are made idempotent here, not by a second retry loop: before creating, the client looks for what it
would create (the open merge request from the fix branch, the note carrying selfix's marker), and a create that
GitLab answers with 409 ("another open merge request already exists", e.g. a retried POST whose first attempt went
through) is answered by looking again. Notes are created without transient retries (a lost response would post a
second note); on failure the client looks for the marker before posting once more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import gitlab
import requests
from gitlab.exceptions import GitlabError as _GitlabException

from selfix_action.gitlab.errors import GitLabError, GitLabRateLimited

T = TypeVar("T")
DRAFT_PREFIX = "Draft: "
_API_ERRORS = (_GitlabException, requests.RequestException, OSError)


@dataclass(frozen=True)
class MergeRequestInfo:
    iid: int
    web_url: str
    state: str
    title: str
    description: str
    source_branch: str
    target_branch: str
    source_project_id: int
    target_project_id: int
    draft: bool = False
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class NoteInfo:
    id: int
    body: str
    discussion_id: str = ""  # commit notes live in a discussion (the only commit comments GitLab lets us edit)


def _translate(exc: Exception, what: str) -> GitLabError:
    if isinstance(exc, _GitlabException):
        status = exc.response_code
        message = str(exc.error_message or "")[:300]
        if status == 429:
            return GitLabRateLimited(f"GitLab rate limit (429) while trying to {what}: {message}", status)
        return GitLabError(f"GitLab API error {status} while trying to {what}: {message}", status)
    return GitLabError(f"cannot reach the GitLab API while trying to {what}: {exc}")


class GitLabClient:
    """One project of one GitLab instance, through a project access token (``api`` and ``write_repository``)."""

    def __init__(
        self, server_url: str, project_id: int | str, token: str, *, max_retries: int = 3, timeout: float = 30.0
    ) -> None:
        self.max_retries = max_retries
        self._gl = gitlab.Gitlab(
            server_url.rstrip("/"),
            private_token=token or None,
            timeout=timeout,
            retry_transient_errors=True,
            user_agent="selfix",
        )
        # A lazy project object: no GET /projects/:id until a call needs it.
        self._project = self._gl.projects.get(project_id, lazy=True)

    def _call(self, what: str, go: Callable[[], T]) -> T:
        try:
            return go()
        except _API_ERRORS as exc:
            raise _translate(exc, what) from exc

    @property
    def _opts(self) -> dict[str, Any]:
        return {"max_retries": self.max_retries}

    # -- merge requests ------------------------------------------------------------------------------------
    @staticmethod
    def _mr_info(mr: Any) -> MergeRequestInfo:
        return MergeRequestInfo(
            iid=int(mr.iid),
            web_url=str(mr.web_url),
            state=str(mr.state),
            title=str(mr.title),
            description=str(mr.description or ""),
            source_branch=str(mr.source_branch),
            target_branch=str(mr.target_branch),
            source_project_id=int(mr.source_project_id),
            target_project_id=int(mr.target_project_id),
            draft=bool(getattr(mr, "draft", False)),
            labels=tuple(str(label) for label in (mr.labels or ())),
        )

    def get_merge_request(self, iid: int) -> MergeRequestInfo:
        return self._call(
            f"read merge request !{iid}", lambda: self._mr_info(self._project.mergerequests.get(iid, **self._opts))
        )

    def find_open_merge_request(self, source_branch: str) -> MergeRequestInfo | None:
        def go() -> MergeRequestInfo | None:
            found = self._project.mergerequests.list(
                source_branch=source_branch, state="opened", get_all=False, **self._opts
            )
            for mr in found:
                if mr.source_branch == source_branch:
                    return self._mr_info(mr)
            return None

        return self._call(f"list open merge requests from {source_branch}", go)

    def create_merge_request(
        self, *, source: str, target: str, title: str, description: str, draft: bool, labels: tuple[str, ...]
    ) -> MergeRequestInfo:
        """Open a merge request from ``source`` into ``target``, or return the one already open from ``source``."""
        existing = self.find_open_merge_request(source)
        if existing is not None:
            return existing
        data: dict[str, Any] = {
            "source_branch": source,
            "target_branch": target,
            "title": (DRAFT_PREFIX + title) if draft else title,
            "description": description,
            "remove_source_branch": True,
        }
        if labels:
            data["labels"] = ",".join(labels)
        try:
            return self._mr_info(self._project.mergerequests.create(data, **self._opts))
        except _API_ERRORS as exc:
            # 409: another open merge request from this branch (a retried POST that went through the first time).
            if isinstance(exc, _GitlabException) and exc.response_code == 409:
                again = self.find_open_merge_request(source)
                if again is not None:
                    return again
            raise _translate(exc, f"open a merge request from {source} into {target}") from exc

    def update_merge_request(self, iid: int, *, title: str, description: str, draft: bool) -> MergeRequestInfo:
        def go() -> MergeRequestInfo:
            mr = self._project.mergerequests.get(iid, lazy=True)
            mr.title = (DRAFT_PREFIX + title) if draft else title
            mr.description = description
            mr.save(**self._opts)
            return self.get_merge_request(iid)

        return self._call(f"update merge request !{iid}", go)

    # -- notes -----------------------------------------------------------------------------------------------
    def find_mr_note(self, iid: int, marker: str) -> NoteInfo | None:
        def go() -> NoteInfo | None:
            mr = self._project.mergerequests.get(iid, lazy=True)
            for note in mr.notes.list(iter=True, **self._opts):
                if marker in (note.body or ""):
                    return NoteInfo(int(note.id), str(note.body))
            return None

        return self._call(f"list the notes of merge request !{iid}", go)

    def upsert_mr_note(self, iid: int, marker: str, body: str) -> NoteInfo:
        """Edit the note carrying ``marker`` on merge request !iid, or create it; never a second one."""
        full = f"{body}\n\n{marker}\n"
        mr = self._project.mergerequests.get(iid, lazy=True)
        existing = self.find_mr_note(iid, marker)
        if existing is not None:
            note_id = existing.id

            def edit() -> NoteInfo:
                note = mr.notes.get(note_id, lazy=True)
                note.body = full
                note.save(**self._opts)
                return NoteInfo(note_id, full)

            return self._call(f"edit note {note_id} of merge request !{iid}", edit)
        return self._create_once(
            f"note on merge request !{iid}",
            lambda: self.find_mr_note(iid, marker),
            lambda: self._note_info(mr.notes.create({"body": full}, retry_transient_errors=False, **self._opts)),
        )

    def find_commit_note(self, sha: str, marker: str) -> NoteInfo | None:
        def go() -> NoteInfo | None:
            commit = self._project.commits.get(sha, lazy=True)
            for discussion in commit.discussions.list(iter=True, **self._opts):
                for note in discussion.attributes.get("notes") or ():
                    if marker in (note.get("body") or ""):
                        return NoteInfo(int(note["id"]), str(note["body"]), str(discussion.id))
            return None

        return self._call(f"list the discussions of commit {sha[:12]}", go)

    def upsert_commit_note(self, sha: str, marker: str, body: str) -> NoteInfo:
        """Edit the note carrying ``marker`` on commit ``sha`` (a commit discussion), or start it; never twice."""
        full = f"{body}\n\n{marker}\n"
        commit = self._project.commits.get(sha, lazy=True)
        existing = self.find_commit_note(sha, marker)
        if existing is not None:
            found = existing

            def edit() -> NoteInfo:
                discussion = commit.discussions.get(found.discussion_id, lazy=True)
                note = discussion.notes.get(found.id, lazy=True)
                note.body = full
                note.save(**self._opts)
                return NoteInfo(found.id, full, found.discussion_id)

            return self._call(f"edit note {found.id} on commit {sha[:12]}", edit)

        def create() -> NoteInfo:
            discussion = commit.discussions.create({"body": full}, retry_transient_errors=False, **self._opts)
            first = (discussion.attributes.get("notes") or [{}])[0]
            return NoteInfo(int(first.get("id", 0)), full, str(discussion.id))

        return self._create_once(f"note on commit {sha[:12]}", lambda: self.find_commit_note(sha, marker), create)

    @staticmethod
    def _note_info(note: Any) -> NoteInfo:
        return NoteInfo(int(note.id), str(note.body))

    def _create_once(self, what: str, find: Callable[[], T | None], create: Callable[[], T]) -> T:
        """``create`` once; if it fails, look (``find``) before one more try: the first may have gone through."""
        try:
            return create()
        except _API_ERRORS as first:
            if isinstance(first, _GitlabException) and first.response_code in (400, 401, 403, 404, 422):
                raise _translate(first, f"create a {what}") from first
            found = find()
            if found is not None:
                return found
            return self._call(f"create a {what}", create)
