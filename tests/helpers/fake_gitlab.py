"""A fake GitLab REST v4 API on 127.0.0.1 for python-gitlab: one project's merge requests, their notes and commit
discussions, in the shapes GitLab returns (``id``/``iid``, ``web_url``, ``source_project_id``, ``draft``, labels as
a list, errors as ``{"message": ...}``, 409 for a second open merge request from one source branch, 429 with
``Retry-After``), plus failure injection (a status ``times`` times, optionally after applying the change: the
response was lost)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from tests.helpers.local_server import JSONHandler, LocalServer

USER = {"id": 77, "username": "project_42_bot", "name": "selfix bot", "state": "active", "web_url": ""}
_DATE = "2026-01-01T00:00:00.000Z"


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]


@dataclass
class State:
    project_id: int
    path: str
    default_branch: str
    merge_requests: dict[int, dict[str, Any]] = field(default_factory=dict)
    mr_notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    commit_discussions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    next_id: int = 5000
    next_iid: int = 1


class FakeGitLab(LocalServer):
    def __init__(
        self, project_id: int = 42, path: str = "group/sub/project", default_branch: str = "main", token: str = ""
    ) -> None:
        super().__init__(_Handler)
        self.state = State(project_id, path, default_branch)
        self.token = token  # "" accepts any PRIVATE-TOKEN; else anything else is a 401
        self.calls: list[Call] = []

    # -- test helpers ------------------------------------------------------------------------------------------
    def rate_limit(self, method: str, path_regex: str, *, times: int = 1, retry_after: int = 0) -> None:
        """429 as GitLab's rate limiter answers it: plain text and a ``Retry-After`` header."""
        headers = {"Retry-After": str(retry_after), "RateLimit-Limit": "600", "RateLimit-Remaining": "0"}
        self.fail(method, path_regex, 429, times=times, headers=headers, body=b"Retry later\n")

    def calls_of(self, method: str | None = None, pattern: str = "") -> list[Call]:
        return [c for c in self.calls if (method is None or c.method == method) and re.search(pattern, c.path)]

    def posts(self) -> list[str]:
        return [c.path for c in self.calls_of("POST")]

    def add_merge_request(
        self,
        source_branch: str,
        target_branch: str,
        *,
        source_project_id: int | None = None,
        labels: tuple[str, ...] = (),
    ) -> int:
        return self._new_mr(
            {"source_branch": source_branch, "target_branch": target_branch, "title": "feature", "description": ""},
            source_project_id=source_project_id,
            labels=labels,
        )["iid"]

    def commit_notes(self, sha: str) -> list[dict[str, Any]]:
        return [note for d in self.state.commit_discussions.get(sha, []) for note in d["notes"]]

    def open_mrs(self) -> list[dict[str, Any]]:
        return [mr for mr in self.state.merge_requests.values() if mr["state"] == "opened"]

    # -- objects -----------------------------------------------------------------------------------------------
    def _id(self) -> int:
        self.state.next_id += 1
        return self.state.next_id

    def _web(self, rest: str) -> str:
        return f"{self.url}/{self.state.path}/-/{rest}"

    def _new_mr(
        self, data: dict[str, Any], *, source_project_id: int | None = None, labels: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        iid = self.state.next_iid
        self.state.next_iid += 1
        title = str(data["title"])
        given = data.get("labels") or ""
        mr = {
            "id": self._id(),
            "iid": iid,
            "project_id": self.state.project_id,
            "title": title,
            "description": data.get("description") or "",
            "state": "opened",
            "created_at": _DATE,
            "updated_at": _DATE,
            "target_branch": data["target_branch"],
            "source_branch": data["source_branch"],
            "author": USER,
            "source_project_id": source_project_id or self.state.project_id,
            "target_project_id": self.state.project_id,
            "labels": list(labels) or [x for x in str(given).split(",") if x],
            "draft": title.startswith(("Draft:", "[Draft]", "(Draft)")),
            "work_in_progress": title.startswith(("Draft:", "[Draft]", "(Draft)")),
            "merge_status": "can_be_merged",
            "sha": "0" * 40,
            "force_remove_source_branch": bool(data.get("remove_source_branch")),
            "web_url": self._web(f"merge_requests/{iid}"),
            "references": {"short": f"!{iid}", "full": f"{self.state.path}!{iid}"},
        }
        self.state.merge_requests[iid] = mr
        self.state.mr_notes[iid] = []
        return mr

    def _note(self, body: str, noteable_type: str, noteable_id: int | None, iid: int | None) -> dict[str, Any]:
        return {
            "id": self._id(),
            "type": None,
            "body": body,
            "author": USER,
            "created_at": _DATE,
            "updated_at": _DATE,
            "system": False,
            "noteable_id": noteable_id,
            "noteable_type": noteable_type,
            "noteable_iid": iid,
            "resolvable": False,
            "confidential": False,
        }

    # -- routing ---------------------------------------------------------------------------------------------
    def handle(
        self, method: str, path: str, query: dict[str, str], body: Any, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.calls.append(Call(method, path, query, body, headers))
            failure = self.take_failure(method, path)
            if failure is not None:
                if failure.after_apply:
                    self._route(method, path, query, body, headers)
                return failure.status, failure.headers, failure.body
            return self._route(method, path, query, body, headers)

    def _route(
        self, method: str, path: str, query: dict[str, str], body: Any, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        if self.token and headers.get("private-token") != self.token:
            return 401, {}, {"message": "401 Unauthorized"}
        prefix = f"/api/v4/projects/{self.state.project_id}"
        if not path.startswith(prefix + "/"):
            return 404, {}, {"message": "404 Project Not Found"}
        rest = path[len(prefix) :]
        routes: list[tuple[str, str, Any]] = [
            ("GET", r"/merge_requests", self._list_mrs),
            ("POST", r"/merge_requests", self._post_mr),
            ("GET", r"/merge_requests/(\d+)", self._get_mr),
            ("PUT", r"/merge_requests/(\d+)", self._put_mr),
            ("GET", r"/merge_requests/(\d+)/notes", self._list_notes),
            ("POST", r"/merge_requests/(\d+)/notes", self._post_note),
            ("PUT", r"/merge_requests/(\d+)/notes/(\d+)", self._put_note),
            ("GET", r"/repository/commits/([0-9a-f]{40})/discussions", self._list_discussions),
            ("POST", r"/repository/commits/([0-9a-f]{40})/discussions", self._post_discussion),
            ("PUT", r"/repository/commits/([0-9a-f]{40})/discussions/([0-9a-f]+)/notes/(\d+)", self._put_dnote),
        ]
        for verb, pattern, fn in routes:
            match = re.fullmatch(pattern, rest)
            if verb == method and match:
                result: tuple[int, dict[str, str], Any] = fn(*match.groups(), query=query, body=body or {})
                return result
        return 404, {}, {"message": "404 Not Found"}

    @staticmethod
    def _page(items: list[Any]) -> tuple[int, dict[str, str], Any]:
        headers = {"x-page": "1", "x-per-page": "20", "x-total": str(len(items)), "x-total-pages": "1"}
        return 200, {**headers, "x-next-page": "", "x-prev-page": ""}, items

    def _list_mrs(self, *, query: dict[str, str], **_: Any) -> tuple[int, dict[str, str], Any]:
        items = list(self.state.merge_requests.values())
        if query.get("state"):
            items = [m for m in items if m["state"] == query["state"]]
        if query.get("source_branch"):
            items = [m for m in items if m["source_branch"] == query["source_branch"]]
        return self._page(items)

    def _post_mr(self, *, body: dict[str, Any], **_: Any) -> tuple[int, dict[str, str], Any]:
        for key in ("source_branch", "target_branch", "title"):
            if not body.get(key):
                return 400, {}, {"error": f"{key} is missing"}
        if any(m["source_branch"] == body["source_branch"] for m in self.open_mrs()):
            iid = next(m["iid"] for m in self.open_mrs() if m["source_branch"] == body["source_branch"])
            message = [f"Another open merge request already exists for this source branch: !{iid}"]
            return 409, {}, {"message": message}
        return 201, {}, self._new_mr(body)

    def _get_mr(self, iid: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        mr = self.state.merge_requests.get(int(iid))
        return (200, {}, mr) if mr else (404, {}, {"message": "404 Not found"})

    def _put_mr(self, iid: str, *, body: dict[str, Any], **_: Any) -> tuple[int, dict[str, str], Any]:
        mr = self.state.merge_requests.get(int(iid))
        if mr is None:
            return 404, {}, {"message": "404 Not found"}
        for key in ("title", "description"):
            if key in body:
                mr[key] = body[key]
        mr["draft"] = mr["work_in_progress"] = str(mr["title"]).startswith("Draft:")
        return 200, {}, mr

    def _list_notes(self, iid: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        if int(iid) not in self.state.merge_requests:
            return 404, {}, {"message": "404 Not found"}
        return self._page(self.state.mr_notes[int(iid)])

    def _post_note(self, iid: str, *, body: dict[str, Any], **_: Any) -> tuple[int, dict[str, str], Any]:
        mr = self.state.merge_requests.get(int(iid))
        if mr is None:
            return 404, {}, {"message": "404 Not found"}
        if not body.get("body"):
            return 400, {}, {"message": {"note": ["can't be blank"]}}
        note = self._note(body["body"], "MergeRequest", mr["id"], mr["iid"])
        self.state.mr_notes[int(iid)].append(note)
        return 201, {}, note

    def _put_note(self, iid: str, nid: str, *, body: dict[str, Any], **_: Any) -> tuple[int, dict[str, str], Any]:
        for note in self.state.mr_notes.get(int(iid), []):
            if note["id"] == int(nid):
                note["body"] = body.get("body", note["body"])
                return 200, {}, note
        return 404, {}, {"message": "404 Not found"}

    def _list_discussions(self, sha: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        return self._page(self.state.commit_discussions.get(sha, []))

    def _post_discussion(self, sha: str, *, body: dict[str, Any], **_: Any) -> tuple[int, dict[str, str], Any]:
        if not body.get("body"):
            return 400, {}, {"message": "400 Bad request - body is missing"}
        note = self._note(body["body"], "Commit", None, None)
        discussion = {"id": f"{self._id():040x}", "individual_note": False, "notes": [note]}
        self.state.commit_discussions.setdefault(sha, []).append(discussion)
        return 201, {}, discussion

    def _put_dnote(
        self, sha: str, did: str, nid: str, *, body: dict[str, Any], **_: Any
    ) -> tuple[int, dict[str, str], Any]:
        for discussion in self.state.commit_discussions.get(sha, []):
            if discussion["id"] == did:
                for note in discussion["notes"]:
                    if note["id"] == int(nid):
                        note["body"] = body.get("body", note["body"])
                        return 200, {}, note
        return 404, {}, {"message": "404 Not found"}


class _Handler(JSONHandler):
    fake: FakeGitLab

    def _serve(self) -> None:
        parts, query, body = self.read_request()
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, extra, data = self.fake.handle(self.command, unquote(parts.path), query, body, headers)
        self.answer(status, extra, data, "text/plain" if isinstance(data, bytes) else "application/json")

    do_GET = do_POST = do_PUT = do_DELETE = _serve
