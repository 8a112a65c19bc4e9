"""A local, stateful fake of the GitHub REST API for the action's integration tests.

``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a background thread. Responses are the recorded real bodies in
``tests/fixtures/github/rest/`` (PyGithub ReplayData) with ids, numbers, refs, URLs and text overridden, so
PyGithub parses exactly the shapes GitHub sends. Every request is logged as ``Call(method, path, query, body)``;
failures can be injected per route (optionally after the change was applied, like a response lost on the way).
"""

from __future__ import annotations

import ast
import copy
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.local_server import JSONHandler, LocalServer

REST = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "rest"


def load_exchanges(name: str) -> list[dict[str, Any]]:
    """Parse a ReplayData file: blocks of 10 lines (protocol .. response body) separated by a blank line."""
    lines = (REST / name).read_text(encoding="utf-8").split("\n")
    out = []
    i = 0
    while i + 9 < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        block = lines[i : i + 10]
        out.append(
            {
                "method": block[1],
                "path": block[4],
                "request_body": json.loads(block[6]) if block[6].strip() not in ("", "None") else None,
                "status": int(block[7]),
                "headers": dict(ast.literal_eval(block[8])),
                "body": json.loads(block[9]) if block[9].strip() else None,
            }
        )
        i += 10
    return out


def recorded(name: str, index: int = -1) -> dict[str, Any]:
    return load_exchanges(name)[index]


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any


@dataclass
class State:
    repo: str
    default_branch: str
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)  # plain issues (pull requests are in pulls)
    issue_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    commit_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    reactions: list[tuple[int, str]] = field(default_factory=list)
    labels: dict[int, list[str]] = field(default_factory=dict)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    permissions: dict[str, str] = field(default_factory=dict)
    artifacts: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    dispatches: list[dict[str, Any]] = field(default_factory=list)  # workflow_dispatch requests: workflow, ref
    # The status a dispatch gets: 200 with the run (return_run_details), 204 (an older server), 403, 422...
    dispatch_status: int = 200
    # The workflows a dispatch may name (by id or file name; None: any) and the inputs they declare under
    # on.workflow_dispatch.inputs (None: any). GitHub answers 404 and 422 ("Unexpected inputs provided") otherwise.
    workflows: set[str] | None = None
    declared_inputs: set[str] | None = None
    blobs: dict[int, bytes] = field(default_factory=dict)
    next_id: int = 1000
    next_number: int = 100
    # GET /user: None answers 403 like GitHub does for the workflow's installation token.
    token_login: str | None = None
    bot_login: str = "github-actions[bot]"  # the author of comments the token creates


class FakeGitHub(LocalServer):
    def __init__(self, repo: str = "octo-org/octo-repo", default_branch: str = "main") -> None:
        super().__init__(_Handler)
        self.state = State(repo, default_branch)
        self.calls: list[Call] = []
        self.blob_auth_headers: list[str | None] = []
        self._templates = {
            "pull": recorded("Repository.testCreatePull.txt")["body"],
            "comment": recorded("Issue.testCreateComment.txt")["body"],
            "reaction": recorded("IssueComment.testCreateReaction.txt")["body"],
            "permission": recorded("Repository.testCollaboratorPermission.txt")["body"],
            "commit_comment": recorded("Commit.testCreateComment.txt")["body"],
            "artifacts": recorded("Artifact.testGetArtifactsFromRepo.txt")["body"],
            "run": recorded("WorkflowRun.setUp.txt")["body"],
            "rate_limit": recorded("SpecificExceptions.testRateLimitExceeded.txt"),
        }

    # -- test helpers ---------------------------------------------------------------------------------------
    def rate_limit(self, method: str, path_regex: str, *, reset_in: float = 1.0, after_apply: bool = False) -> None:
        """A primary rate limit 403 in the recorded shape, with an x-ratelimit-reset header."""
        rec = self._templates["rate_limit"]
        body = {"message": "API rate limit exceeded for installation ID 1.", **{"documentation_url": ""}}
        assert rec["status"] == 403 and "API Rate Limit Exceeded" in rec["body"]["message"]
        self.fail(
            method,
            path_regex,
            403,
            headers={
                "x-ratelimit-limit": "5000",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(time.time() + reset_in)),
            },
            body=body,
            after_apply=after_apply,
        )

    def calls_of(self, method: str | None = None, pattern: str = "") -> list[Call]:
        return [c for c in self.calls if (method is None or c.method == method) and re.search(pattern, c.path)]

    def writes(self) -> list[tuple[str, str]]:
        return [(c.method, c.path) for c in self.calls if c.method != "GET"]

    def add_pull(self, *, head_ref: str, head_sha: str, base_ref: str, head_repo: str | None = None) -> int:
        with self._lock:
            number = self._new_number()
            self.state.pulls[number] = self._pull(
                number, head_ref, head_sha, base_ref, head_repo or self.state.repo, "", "", False
            )
            return number

    def add_issue_comment(self, number: int, body: str, *, login: str, user_type: str = "User") -> int:
        """A comment written by someone else (e.g. a user pasting selfix's hidden marker)."""
        with self._lock:
            cid = self._new_id()
            comment = self._comment(cid, body, f"{self.url}/repos/{self.state.repo}/issues/{number}")
            comment["user"] = {**comment["user"], "login": login, "type": user_type}
            self.state.issue_comments[cid] = {**comment, "_issue": number}
            return cid

    def add_artifact(self, run_id: int, name: str, data: bytes, *, expired: bool = False) -> int:
        with self._lock:
            art_id = self._new_id()
            template = copy.deepcopy(self._templates["artifacts"]["artifacts"][0])
            template.update(
                id=art_id,
                name=name,
                size_in_bytes=len(data),
                expired=expired,
                url=f"{self.url}/repos/{self.state.repo}/actions/artifacts/{art_id}",
                archive_download_url=f"{self.url}/repos/{self.state.repo}/actions/artifacts/{art_id}/zip",
            )
            self.state.artifacts.setdefault(run_id, []).append(template)
            self.state.blobs[art_id] = data
            return art_id

    # -- shapes ---------------------------------------------------------------------------------------------
    def _new_id(self) -> int:
        self.state.next_id += 1
        return self.state.next_id

    def _new_number(self) -> int:
        self.state.next_number += 1
        return self.state.next_number

    def _rewrite_urls(self, data: Any) -> Any:
        text = json.dumps(data).replace("https://api.github.com", self.url)
        return json.loads(text)

    def _repo_obj(self, full_name: str, template: dict[str, Any]) -> dict[str, Any]:
        repo = copy.deepcopy(template)
        owner, name = full_name.split("/")
        repo.update(
            full_name=full_name,
            name=name,
            fork=full_name != self.state.repo,
            url=f"{self.url}/repos/{full_name}",
            html_url=f"https://github.com/{full_name}",
        )
        repo["owner"] = {**repo.get("owner", {}), "login": owner}
        return repo

    def _pull(
        self,
        number: int,
        head_ref: str,
        head_sha: str,
        base_ref: str,
        head_repo: str,
        title: str,
        body: str,
        draft: bool,
    ) -> dict[str, Any]:
        pull = self._rewrite_urls(copy.deepcopy(self._templates["pull"]))
        base_url = f"{self.url}/repos/{self.state.repo}"
        pull.update(
            id=self._new_id(),
            number=number,
            state="open",
            title=title,
            body=body,
            draft=draft,
            merged=False,
            url=f"{base_url}/pulls/{number}",
            html_url=f"https://github.com/{self.state.repo}/pull/{number}",
            issue_url=f"{base_url}/issues/{number}",
            comments_url=f"{base_url}/issues/{number}/comments",
            labels=[],  # today's API always lists them (the recording predates the field)
        )
        head_owner = head_repo.split("/")[0]
        pull["head"] = {
            **pull["head"],
            "ref": head_ref,
            "sha": head_sha,
            "label": f"{head_owner}:{head_ref}",
            "repo": self._repo_obj(head_repo, pull["head"]["repo"]),
        }
        pull["base"] = {
            **pull["base"],
            "ref": base_ref,
            "label": f"{self.state.repo.split('/')[0]}:{base_ref}",
            "repo": self._repo_obj(self.state.repo, pull["base"]["repo"]),
        }
        return pull

    def _comment(self, cid: int, body: str, issue_url: str, template: str = "comment") -> dict[str, Any]:
        comment = self._rewrite_urls(copy.deepcopy(self._templates[template]))
        comment.update(id=cid, body=body, html_url=f"https://github.com/{self.state.repo}#comment-{cid}")
        login = self.state.token_login or self.state.bot_login
        comment["user"] = {**comment["user"], "login": login, "type": "User" if self.state.token_login else "Bot"}
        if template == "comment":
            comment.update(url=f"{self.url}/repos/{self.state.repo}/issues/comments/{cid}", issue_url=issue_url)
        else:
            comment.update(url=f"{self.url}/repos/{self.state.repo}/comments/{cid}")
        return comment

    # -- routing --------------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.calls.append(Call(method, path, query, body))
            failure = self.take_failure(method, path)
            if failure is not None:
                if failure.after_apply:
                    self._route(method, path, query, body)
                return failure.status, failure.headers, failure.body
            return self._route(method, path, query, body)

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, dict[str, str], Any]:
        st = self.state
        prefix = f"/repos/{st.repo}"
        if path.startswith("/_blob/"):
            return 200, {"content-type": "application/zip"}, st.blobs[int(path.rsplit("/", 1)[1])]
        if path == "/user" and method == "GET":
            return self._get_user()
        if not path.startswith(prefix + "/"):
            return 404, {}, {"message": "Not Found"}
        rest = path[len(prefix) :]
        routes: list[tuple[str, str, Callable[..., tuple[int, dict[str, str], Any]]]] = [
            ("GET", r"^/collaborators/(?P<login>[^/]+)/permission$", self._get_permission),
            ("POST", r"^/issues/comments/(?P<cid>\d+)/reactions$", self._post_reaction),
            ("PATCH", r"^/issues/comments/(?P<cid>\d+)$", self._patch_comment),
            ("GET", r"^/issues/(?P<num>\d+)/comments$", self._list_comments),
            ("POST", r"^/issues/(?P<num>\d+)/comments$", self._post_comment),
            ("POST", r"^/issues/(?P<num>\d+)/labels$", self._post_labels),
            ("GET", r"^/issues$", self._list_issues),
            ("POST", r"^/issues$", self._post_issue),
            ("PATCH", r"^/issues/(?P<num>\d+)$", self._patch_issue),
            ("GET", r"^/pulls$", self._list_pulls),
            ("POST", r"^/pulls$", self._post_pull),
            ("GET", r"^/pulls/(?P<num>\d+)$", self._get_pull),
            ("PATCH", r"^/pulls/(?P<num>\d+)$", self._patch_pull),
            ("POST", r"^/pulls/(?P<num>\d+)/reviews$", self._post_review),
            ("GET", r"^/pulls/(?P<num>\d+)/reviews$", self._list_reviews),
            ("GET", r"^/pulls/(?P<num>\d+)/reviews/(?P<rid>\d+)$", self._get_review),
            ("PUT", r"^/pulls/(?P<num>\d+)/reviews/(?P<rid>\d+)$", self._put_review),
            ("GET", r"^/commits/(?P<sha>[0-9a-f]{40})/pulls$", self._commit_pulls),
            ("GET", r"^/commits/(?P<sha>[0-9a-f]{40})/comments$", self._list_commit_comments),
            ("POST", r"^/commits/(?P<sha>[0-9a-f]{40})/comments$", self._post_commit_comment),
            ("PATCH", r"^/comments/(?P<cid>\d+)$", self._patch_commit_comment),
            ("GET", r"^/actions/runs/(?P<run>\d+)$", self._get_run),
            ("POST", r"^/actions/workflows/(?P<wid>[^/]+)/dispatches$", self._post_dispatch),
            ("GET", r"^/actions/runs/(?P<run>\d+)/artifacts$", self._list_artifacts),
            ("GET", r"^/actions/artifacts/(?P<aid>\d+)/zip$", self._artifact_zip),
        ]
        for verb, pattern, func in routes:
            match = re.match(pattern, rest)
            if verb == method and match:
                return func(query=query, body=body, **match.groupdict())
        return 404, {}, {"message": f"fake GitHub has no route {method} {rest}"}

    def _get_user(self) -> tuple[int, dict[str, str], Any]:
        if self.state.token_login is None:
            return 403, {}, {"message": "Resource not accessible by integration"}
        user = self._rewrite_urls(copy.deepcopy(self._templates["permission"]["user"]))
        user.update(login=self.state.token_login, type="User")
        return 200, {}, user

    def _get_permission(self, login: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        perm = self.state.permissions.get(login)
        if perm is None:
            return 404, {}, {"message": f"{login} is not a user"}
        data = self._rewrite_urls(copy.deepcopy(self._templates["permission"]))
        data["permission"] = perm
        data["user"] = {**data["user"], "login": login}
        return 200, {}, data

    def _post_reaction(self, cid: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        self.state.reactions.append((int(cid), body["content"]))
        data = copy.deepcopy(self._templates["reaction"])
        data.update(id=self._new_id(), content=body["content"])
        return 201, {}, data

    def _list_comments(self, num: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        items = [c for c in self.state.issue_comments.values() if c["_issue"] == int(num)]
        return 200, {}, [{k: v for k, v in c.items() if k != "_issue"} for c in items]

    def _post_comment(self, num: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        cid = self._new_id()
        issue_url = f"{self.url}/repos/{self.state.repo}/issues/{num}"
        comment = self._comment(cid, body["body"], issue_url)
        self.state.issue_comments[cid] = {**comment, "_issue": int(num)}
        return 201, {}, comment

    def _patch_comment(self, cid: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        comment = self.state.issue_comments.get(int(cid))
        if comment is None:
            return 404, {}, {"message": "Not Found"}
        comment["body"] = body["body"]
        return 200, {}, {k: v for k, v in comment.items() if k != "_issue"}

    def _post_labels(self, num: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        names = body["labels"] if isinstance(body, dict) else body
        return 200, {}, self._add_labels(int(num), names)

    def _add_labels(self, number: int, names: list[str]) -> list[dict[str, Any]]:
        labels = self.state.labels.setdefault(number, [])
        labels += [n for n in names if n not in labels]
        objects = [self._label_obj(i, n) for i, n in enumerate(labels)]
        for item in (self.state.pulls.get(number), self.state.issues.get(number)):
            if item is not None:  # like GitHub: the pull request or issue lists its labels from now on
                item["labels"] = objects
        return objects

    def _label_obj(self, index: int, name: str) -> dict[str, Any]:
        return {
            "id": 7000 + index,
            "node_id": f"LA_{index}",
            "url": f"{self.url}/repos/{self.state.repo}/labels/{name}",
            "name": name,
            "color": "ededed",
            "default": False,
            "description": None,
        }

    def label(self, number: int, *names: str) -> None:
        """A label someone put on pull request or issue ``number``."""
        with self._lock:
            self._add_labels(number, list(names))

    def add_issue(self, title: str, body: str, *, login: str) -> int:
        """An issue written by someone else (e.g. one quoting selfix's hidden marker)."""
        with self._lock:
            number = self._new_number()
            self.state.issues[number] = self._issue(number, title, body)
            self.state.issues[number]["user"]["login"] = login
            return number

    def _issue(self, number: int, title: str, body: str) -> dict[str, Any]:
        """An issue as GitHub's REST API returns one: the recorded pull request minus its pull-only fields."""
        pull = self._rewrite_urls(copy.deepcopy(self._templates["pull"]))
        base_url = f"{self.url}/repos/{self.state.repo}"
        keep = ("user", "labels", "locked", "assignee", "assignees", "milestone", "created_at", "updated_at")
        issue = {key: pull[key] for key in keep if key in pull}
        login = self.state.token_login or self.state.bot_login
        issue["user"] = {**issue["user"], "login": login, "type": "User" if self.state.token_login else "Bot"}
        issue.update(
            id=self._new_id(),
            number=number,
            state="open",
            title=title,
            body=body,
            comments=0,
            labels=[],
            closed_at=None,
            url=f"{base_url}/issues/{number}",
            repository_url=base_url,
            comments_url=f"{base_url}/issues/{number}/comments",
            html_url=f"https://github.com/{self.state.repo}/issues/{number}",
        )
        return issue

    def _list_issues(self, query: dict[str, str], **_: Any) -> tuple[int, dict[str, str], Any]:
        # Like GitHub, the issues list holds pull requests too (with a pull_request key), newest first.
        issues = [i for i in self.state.issues.values() if i["state"] == query.get("state", "open")]
        pulls = [
            {**p, "pull_request": {"url": p["url"]}}
            for p in self.state.pulls.values()
            if p["state"] == query.get("state", "open")
        ]
        return 200, {}, sorted([*issues, *pulls], key=lambda item: -item["number"])

    def _post_issue(self, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        number = self._new_number()
        issue = self._issue(number, body["title"], body.get("body", ""))
        self.state.issues[number] = issue
        return 201, {}, issue

    def _patch_issue(self, num: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        issue = self.state.issues.get(int(num))
        if issue is None:
            return 404, {}, {"message": "Not Found"}
        issue.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
        return 200, {}, issue

    def _list_pulls(self, query: dict[str, str], **_: Any) -> tuple[int, dict[str, str], Any]:
        pulls = list(self.state.pulls.values())
        if query.get("state", "open") != "all":
            pulls = [p for p in pulls if p["state"] == query.get("state", "open")]
        if "head" in query:
            pulls = [p for p in pulls if p["head"]["label"] == query["head"]]
        if "base" in query:
            pulls = [p for p in pulls if p["base"]["ref"] == query["base"]]
        if query.get("direction") == "desc":
            pulls.sort(key=lambda p: -p["number"])
        return 200, {}, pulls

    def _post_pull(self, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        owner = self.state.repo.split("/")[0]
        head = body["head"].split(":", 1)[-1]
        label = f"{owner}:{head}"
        if any(p["head"]["label"] == label and p["state"] == "open" for p in self.state.pulls.values()):
            return 422, {}, {"message": "Validation Failed", "errors": [{"message": "A pull request already exists"}]}
        number = self._new_number()
        pull = self._pull(
            number,
            head,
            "0" * 40,
            body["base"],
            self.state.repo,
            body["title"],
            body.get("body", ""),
            body.get("draft", False),
        )
        self.state.pulls[number] = pull
        return 201, {}, pull

    def _get_pull(self, num: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        pull = self.state.pulls.get(int(num))
        return (200, {}, pull) if pull else (404, {}, {"message": "Not Found"})

    def _patch_pull(self, num: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        pull = self.state.pulls.get(int(num))
        if pull is None:
            return 404, {}, {"message": "Not Found"}
        pull.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
        return 200, {}, pull

    def _post_review(self, num: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        review = {"id": self._new_id(), "pull": int(num), **body}
        self.state.reviews.append(review)
        return 200, {}, self._review_obj(review)

    def _review_obj(self, review: dict[str, Any]) -> dict[str, Any]:
        """A review as GitHub's REST API documents it (no recorded review body exists in the fixtures)."""
        base_url = f"{self.url}/repos/{self.state.repo}"
        login = self.state.token_login or self.state.bot_login
        user = self._comment(0, "", "")["user"]
        return {
            "id": review["id"],
            "node_id": f"PRR_{review['id']}",
            "user": {**user, "login": login},
            "body": review.get("body", ""),
            "state": "COMMENTED",
            "html_url": f"https://github.com/{self.state.repo}/pull/{review['pull']}#pullrequestreview-{review['id']}",
            "pull_request_url": f"{base_url}/pulls/{review['pull']}",
            "commit_id": review.get("commit_id"),
            "submitted_at": "2024-01-01T00:00:00Z",
            "author_association": "CONTRIBUTOR",
        }

    def _list_reviews(self, num: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        return 200, {}, [self._review_obj(r) for r in self.state.reviews if r["pull"] == int(num)]

    def _find_review(self, num: str, rid: str) -> dict[str, Any] | None:
        return next((r for r in self.state.reviews if r["pull"] == int(num) and r["id"] == int(rid)), None)

    def _get_review(self, num: str, rid: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        review = self._find_review(num, rid)
        return (200, {}, self._review_obj(review)) if review else (404, {}, {"message": "Not Found"})

    def _put_review(self, num: str, rid: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        review = self._find_review(num, rid)
        if review is None:
            return 404, {}, {"message": "Not Found"}
        review["body"] = body["body"]  # only the summary text: the line comments stay
        return 200, {}, self._review_obj(review)

    def _commit_pulls(self, sha: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        return 200, {}, [p for p in self.state.pulls.values() if p["head"]["sha"] == sha]

    def _list_commit_comments(self, sha: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        items = [c for c in self.state.commit_comments.values() if c["commit_id"] == sha]
        return 200, {}, items

    def _post_commit_comment(self, sha: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        cid = self._new_id()
        comment = self._comment(cid, body["body"], "", template="commit_comment")
        comment["commit_id"] = sha
        self.state.commit_comments[cid] = comment
        return 201, {}, comment

    def _patch_commit_comment(self, cid: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        comment = self.state.commit_comments.get(int(cid))
        if comment is None:
            return 404, {}, {"message": "Not Found"}
        comment["body"] = body["body"]
        return 200, {}, comment

    def _get_run(self, run: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        data = self._rewrite_urls(copy.deepcopy(self._templates["run"]))
        base = f"{self.url}/repos/{self.state.repo}/actions/runs/{run}"
        data.update(id=int(run), url=base, artifacts_url=f"{base}/artifacts", conclusion="failure")
        return 200, {}, data

    def _post_dispatch(self, wid: str, body: Any, **_: Any) -> tuple[int, dict[str, str], Any]:
        status = self.state.dispatch_status
        if status == 403:
            return 403, {}, {"message": "Resource not accessible by integration"}
        if status == 422:
            return 422, {}, {"message": "Workflow does not have 'workflow_dispatch' trigger"}
        if self.state.workflows is not None and wid not in self.state.workflows:
            return 404, {}, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
        inputs = body.get("inputs") or {}
        declared = self.state.declared_inputs
        if declared is not None and set(inputs) - declared:
            unexpected = ", ".join(f'"{name}"' for name in sorted(set(inputs) - declared))
            return 422, {}, {"message": f"Unexpected inputs provided: [{unexpected}]"}
        run_id = self._new_id()
        self.state.dispatches.append({"workflow": wid, "ref": body["ref"], "run_id": run_id, "inputs": inputs})
        if status == 204 or not body.get("return_run_details"):
            return 204, {}, b""
        url = f"{self.url}/repos/{self.state.repo}/actions/runs/{run_id}"
        html = f"https://github.com/{self.state.repo}/actions/runs/{run_id}"
        return 200, {}, {"workflow_run_id": run_id, "run_url": url, "html_url": html}

    def _list_artifacts(self, run: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        items = self.state.artifacts.get(int(run), [])
        return 200, {}, {"total_count": len(items), "artifacts": items}

    def _artifact_zip(self, aid: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        # Like GitHub: a redirect to blob storage on another host ("localhost" != "127.0.0.1" for the client).
        port = self.server.server_address[1]
        return 302, {"location": f"http://localhost:{port}/_blob/{aid}"}, b""


class _Handler(JSONHandler):
    fake: FakeGitHub

    def _serve(self) -> None:
        parts, query, body = self.read_request()
        if parts.path.startswith("/_blob/"):
            self.fake.blob_auth_headers.append(self.headers.get("authorization"))
        status, headers, data = self.fake.handle(self.command, parts.path, query, body)
        self.answer(status, headers, data, "application/json; charset=utf-8")

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve
