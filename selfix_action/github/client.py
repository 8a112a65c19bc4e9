"""``GitHubClient``: every GitHub REST call selfix makes, over PyGithub, returning plain dataclasses.

Retries: idempotent requests (GET, PATCH, PUT, DELETE) are retried by PyGithub's ``GithubRetry`` on 5xx and on
rate limits (waiting for ``x-ratelimit-reset`` up to a cap). Creating requests (POST) are never retried blindly:
a 500 may arrive after GitHub already created the pull request or comment, so on failure the client first looks
for what it was creating (by head branch, or by the hidden marker in a comment) and only creates again if it is
absent. That is what keeps a flaky API from producing duplicate PRs and comments.
"""

from __future__ import annotations

import fnmatch
import itertools
import shutil
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, GithubRetry, RateLimitExceededException
from github.GithubException import RateLimitExceededExceedsMaxWait
from github.PullRequest import ReviewComment

from selfix_action.github.artifacts import ExtractLimits, safe_extract
from selfix_action.github.errors import ArtifactRefused, GitHubError, GitHubRateLimited
from selfix_action.publish.values import PullInfo, ReviewSuggestion

T = TypeVar("T")
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
# Who comments with the workflow's GITHUB_TOKEN (an installation token: GET /user is refused for it).
DEFAULT_BOT_LOGIN = "github-actions[bot]"


@dataclass(frozen=True)
class CommentInfo:
    id: int
    body: str
    html_url: str
    user: str


@dataclass(frozen=True)
class IssueInfo:
    number: int
    html_url: str
    created: bool  # opened by this call (else an open one was edited)
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReviewInfo:
    id: int
    body: str
    commit_id: str


# Open issues looked through for selfix's own escalation issue, newest first; an older one is not found (a new
# one is opened instead, which is the lesser harm than listing every issue of a big repository on each run).
MAX_ISSUES_SCANNED = 300
# Open pull requests looked through when counting selfix's own (max_open_prs), newest first: ten pages at most.
MAX_PULLS_SCANNED = 1000


@dataclass(frozen=True)
class ArtifactInfo:
    id: int
    name: str
    size_in_bytes: int
    expired: bool
    archive_download_url: str


def _reset_at(exc: Exception) -> float | None:
    """When a rate limit lifts, from the refusal's headers (retry-after wins, as GitHub documents)."""
    headers = {k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
    if str(headers.get("retry-after", "")).isdigit():
        return time.time() + float(headers["retry-after"])
    if str(headers.get("x-ratelimit-reset", "")).isdigit():
        return float(headers["x-ratelimit-reset"])
    return None


def _translate(exc: Exception, what: str) -> GitHubError:
    if isinstance(exc, RateLimitExceededExceedsMaxWait | RateLimitExceededException):
        return GitHubRateLimited(
            f"GitHub rate limit while trying to {what}", getattr(exc, "status", 403), reset_at=_reset_at(exc)
        )
    if isinstance(exc, GithubException):
        message = exc.data.get("message", "") if isinstance(exc.data, dict) else str(exc.data)
        return GitHubError(f"GitHub API error {exc.status} while trying to {what}: {message}", exc.status, message)
    return GitHubError(f"cannot reach the GitHub API while trying to {what}: {exc}")


_API_ERRORS = (GithubException, requests.RequestException, OSError)


def _rate_limit_wait(exc: Exception, cap: float) -> float | None:
    """Seconds until the rate limit resets, if ``exc`` is a rate limit we are willing to wait for."""
    if not isinstance(exc, RateLimitExceededException):
        return None
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    if "retry-after" in headers and str(headers["retry-after"]).isdigit():
        wait = float(headers["retry-after"])
    elif str(headers.get("x-ratelimit-reset", "")).isdigit():
        wait = float(headers["x-ratelimit-reset"]) - time.time() + 1
    else:
        wait = cap + 1
    return max(wait, 0.0) if wait <= cap else None


class GitHubClient:
    """One repository's API, authenticated with the workflow's token."""

    def __init__(
        self,
        token: str,
        repository: str,
        api_url: str = "https://api.github.com",
        *,
        retries: int = 3,
        backoff: float = 0.5,
        max_rate_limit_wait: float = 90.0,
        write_interval: float = 1.0,
        timeout: float = 30.0,
        bot_login: str = DEFAULT_BOT_LOGIN,
    ) -> None:
        self.repository = repository
        self._bot_login = bot_login
        self._own_login: str | None = None
        self._owner = repository.split("/", 1)[0]
        self._token = token
        self._timeout = timeout
        self._backoff = backoff
        self._retries = retries
        self._max_wait = max_rate_limit_wait
        retry = GithubRetry(
            total=retries,
            backoff_factor=backoff,
            max_rate_limit_wait=max_rate_limit_wait,
            # POST is deliberately absent: creations are retried by _create after checking for a duplicate.
            allowed_methods=frozenset({"GET", "HEAD", "PATCH", "PUT", "DELETE"}),
        )
        self._gh = Github(
            auth=Auth.Token(token) if token else None,
            base_url=api_url.rstrip("/"),
            retry=retry,
            timeout=int(timeout),
            lazy=True,  # no GET for objects we only address (repo, issue, pull): fewer calls, fewer failures
            per_page=100,
            seconds_between_requests=None,
            # GitHub asks integrators to space writes to avoid secondary rate limits.
            seconds_between_writes=write_interval or None,
        )
        self._repo = self._gh.get_repo(repository)

    # -- plumbing -------------------------------------------------------------------------------------
    def _call(self, what: str, func: Callable[[], T]) -> T:
        try:
            return func()
        except _API_ERRORS as exc:
            raise _translate(exc, what) from exc

    def _create(self, what: str, find: Callable[[], T | None], create: Callable[[], T]) -> T:
        """Create something once: after a failed POST, look for it before trying again."""
        last: Exception | None = None
        for attempt in range(self._retries + 1):
            if attempt:
                existing = self._call(f"look for an existing {what}", find)
                if existing is not None:
                    return existing
            try:
                return create()
            except GithubException as exc:
                last = exc
                wait = _rate_limit_wait(exc, self._max_wait)
                if exc.status == 403 and wait is None and not isinstance(exc, RateLimitExceededException):
                    break  # a real permission error: retrying will not help
                if 400 <= exc.status < 500 and exc.status not in (403, 429):
                    break
                if isinstance(exc, RateLimitExceededException) and wait is None:
                    break
                time.sleep(wait if wait is not None else self._backoff * (2**attempt))
            except (requests.RequestException, OSError) as exc:
                last = exc
                time.sleep(self._backoff * (2**attempt))
        assert last is not None
        raise _translate(last, f"create a {what}") from last

    # -- people ---------------------------------------------------------------------------------------
    def permission(self, login: str) -> str:
        """The user's permission on the repository: admin, maintain, write, triage, read or none."""
        try:
            return str(self._repo.get_collaborator_permission(login))
        except GithubException as exc:
            if exc.status in (403, 404) and not isinstance(exc, RateLimitExceededException):
                return "none"  # not a collaborator, or we may not even ask: treat as no permission
            raise _translate(exc, f"read the permission of {login}") from exc
        except _API_ERRORS as exc:
            raise _translate(exc, f"read the permission of {login}") from exc

    def own_login(self) -> str:
        """The token's own identity: GET /user for a user or app user token; installation tokens (the workflow's
        GITHUB_TOKEN, GitHub App tokens) are refused there and comment as ``bot_login``."""
        if self._own_login is None:
            try:
                self._own_login = str(self._gh.get_user().login)
            except GithubException as exc:
                if exc.status not in (401, 403, 404) or isinstance(exc, RateLimitExceededException):
                    raise _translate(exc, "read the token's own login") from exc
                self._own_login = self._bot_login
            except _API_ERRORS as exc:
                raise _translate(exc, "read the token's own login") from exc
        return self._own_login

    def _is_ours(self, comment: Any, marker: str) -> bool:
        """Our tracking comment: carries the marker AND was written by this token's identity (anyone can paste
        the marker into a comment of their own; editing theirs would put our text under their name)."""
        if marker not in (comment.body or ""):
            return False
        author = comment.user.login if comment.user is not None else ""
        return bool(author) and author == self.own_login()

    def react_to_comment(self, comment_id: int, content: str) -> None:
        def go() -> None:
            self._repo.get_issue(0).get_comment(comment_id).create_reaction(content)

        # A duplicate reaction is harmless (GitHub returns the existing one), so a plain retry is fine.
        try:
            self._call(f"react to comment {comment_id}", go)
        except GitHubError:
            self._call(f"react to comment {comment_id}", go)

    # -- pull requests -----------------------------------------------------------------------------------
    @staticmethod
    def _pull_info(pull: Any) -> PullInfo:
        head_repo = pull.head.repo.full_name if pull.head.repo is not None else ""
        return PullInfo(
            number=pull.number,
            html_url=pull.html_url,
            state=pull.state,
            title=pull.title or "",
            body=pull.body or "",
            head_ref=pull.head.ref,
            head_sha=pull.head.sha,
            head_repo=head_repo,
            base_ref=pull.base.ref,
            draft=bool(pull.draft),
            labels=tuple(label.name for label in pull.labels),
        )

    def get_pull(self, number: int) -> PullInfo:
        return self._call(f"read pull request #{number}", lambda: self._pull_info(self._repo.get_pull(number)))

    def find_open_pull(self, head_branch: str) -> PullInfo | None:
        def go() -> PullInfo | None:
            for pull in self._repo.get_pulls(state="open", head=f"{self._owner}:{head_branch}"):
                if pull.head.ref == head_branch:
                    return self._pull_info(pull)
            return None

        return self._call(f"list open pull requests from {head_branch}", go)

    def open_pulls_from(self, branch_prefix: str) -> list[PullInfo]:
        """The open pull requests whose head is a branch of this repository starting with ``branch_prefix``,
        newest first (the first ``MAX_PULLS_SCANNED`` open pull requests are looked at)."""

        def go() -> list[PullInfo]:
            pulls = self._repo.get_pulls(state="open", sort="created", direction="desc")
            found = []
            for pull in itertools.islice(pulls, MAX_PULLS_SCANNED):
                head_repo = pull.head.repo.full_name if pull.head.repo is not None else ""
                if pull.head.ref.startswith(branch_prefix) and head_repo == self.repository:
                    found.append(self._pull_info(pull))
            return found

        return self._call(f"list the open pull requests from {branch_prefix}* branches", go)

    def pulls_for_commit(self, sha: str) -> list[PullInfo]:
        def go() -> list[PullInfo]:
            return [self._pull_info(p) for p in self._repo.get_commit(sha).get_pulls() if p.state == "open"]

        return self._call(f"list pull requests of {sha[:12]}", go)

    def create_pull(self, *, base: str, head: str, title: str, body: str, draft: bool) -> PullInfo:
        return self._create(
            "pull request",
            lambda: self.find_open_pull(head),
            lambda: self._pull_info(
                self._repo.create_pull(
                    base=base, head=head, title=title, body=body, draft=draft, maintainer_can_modify=True
                )
            ),
        )

    def update_pull(self, number: int, *, title: str, body: str) -> PullInfo:
        def go() -> PullInfo:
            pull = self._repo.get_pull(number)
            pull.edit(title=title, body=body)
            return self._pull_info(pull)

        return self._call(f"update pull request #{number}", go)

    def add_labels(self, number: int, labels: Sequence[str]) -> None:
        if labels:
            # Adding labels is idempotent on GitHub's side, so a retry cannot duplicate anything.
            self._call(f"label #{number}", lambda: self._repo.get_issue(number).add_to_labels(*labels))

    def find_review(self, number: int, marker: str) -> ReviewInfo | None:
        """The review on #number that this token wrote and that carries ``marker`` (a prefix of selfix's marker is
        enough), else None."""

        def go() -> ReviewInfo | None:
            for review in self._repo.get_pull(number).get_reviews():
                if self._is_ours(review, marker):
                    return ReviewInfo(review.id, review.body or "", review.commit_id or "")
            return None

        return self._call(f"list the reviews of #{number}", go)

    def edit_review(self, number: int, review_id: int, body: str) -> None:
        """Replace the summary text of a submitted review (its line comments stay as they are: GitHub takes no new
        ones into a submitted review)."""
        self._call(
            f"edit review {review_id} on #{number}",
            lambda: self._repo.get_pull(number).get_review(review_id).edit(body),
        )

    def create_review(
        self, number: int, commit_sha: str, body: str, suggestions: Sequence[ReviewSuggestion], marker: str = ""
    ) -> None:
        """A COMMENT review with ``suggestions`` on their lines. With ``marker`` (appended to the body), a failed
        POST is retried only after looking for the review it may have created."""
        comments: list[ReviewComment] = []
        for s in suggestions:
            comment: ReviewComment = {"path": s.path, "line": s.line, "side": "RIGHT", "body": s.body}
            if s.start_line < s.line:
                comment["start_line"] = s.start_line
                comment["start_side"] = "RIGHT"
            comments.append(comment)

        full = f"{body}\n\n{marker}\n" if marker else body

        def go() -> ReviewInfo:
            pull = self._repo.get_pull(number)
            review = pull.create_review(
                commit=self._repo.get_commit(commit_sha), body=full, event="COMMENT", comments=comments
            )
            return ReviewInfo(review.id, full, commit_sha)

        if not marker:
            self._call(f"post review suggestions on #{number}", go)
            return
        self._create("review", lambda: self.find_review(number, marker), go)

    # -- comments (one per marker, edited in place) ----------------------------------------------------------
    @staticmethod
    def _comment_info(comment: Any) -> CommentInfo:
        return CommentInfo(comment.id, comment.body or "", comment.html_url, comment.user.login if comment.user else "")

    def find_issue_comment(self, number: int, marker: str) -> CommentInfo | None:
        def go() -> CommentInfo | None:
            for comment in self._repo.get_issue(number).get_comments():
                if self._is_ours(comment, marker):
                    return self._comment_info(comment)
            return None

        return self._call(f"list the comments of #{number}", go)

    def upsert_issue_comment(
        self, number: int, marker: str, body: str, known: CommentInfo | None = None
    ) -> CommentInfo:
        """Edit the comment carrying ``marker`` on #number, or create it; never a second one."""
        full = f"{body}\n\n{marker}\n"
        existing = known or self.find_issue_comment(number, marker)
        if existing is not None:
            comment_id = existing.id

            def edit() -> CommentInfo:
                comment = self._repo.get_issue(number).get_comment(comment_id)
                comment.edit(full)
                return CommentInfo(comment_id, full, existing.html_url, existing.user)

            return self._call(f"edit comment {comment_id}", edit)
        return self._create(
            "comment",
            lambda: self.find_issue_comment(number, marker),
            lambda: self._comment_info(self._repo.get_issue(number).create_comment(full)),
        )

    def upsert_commit_comment(self, sha: str, marker: str, body: str) -> CommentInfo:
        full = f"{body}\n\n{marker}\n"

        def find() -> CommentInfo | None:
            for comment in self._repo.get_commit(sha).get_comments():
                if self._is_ours(comment, marker):
                    return self._comment_info(comment)
            return None

        existing = self._call(f"list the comments of commit {sha[:12]}", find)
        if existing is not None:
            comment_id = existing.id

            def edit() -> CommentInfo:
                comment = self._repo.get_comment(comment_id)
                comment.edit(full)
                return CommentInfo(comment_id, full, existing.html_url, existing.user)

            return self._call(f"edit commit comment {comment_id}", edit)
        return self._create(
            "commit comment",
            find,
            lambda: self._comment_info(self._repo.get_commit(sha).create_comment(full)),
        )

    # -- issues (escalations for failures without a pull request) ----------------------------------------
    def find_issue(self, marker: str) -> IssueInfo | None:
        """The open issue this token opened that carries ``marker`` (never an issue someone else wrote)."""

        def go() -> IssueInfo | None:
            issues = self._repo.get_issues(state="open", sort="created", direction="desc")
            for issue in itertools.islice(issues, MAX_ISSUES_SCANNED):
                # html_url, not .pull_request: a plain issue lacks that key and PyGithub would GET each one.
                if "/pull/" not in (issue.html_url or "") and self._is_ours(issue, marker):
                    labels = tuple(label.name for label in issue.labels)
                    return IssueInfo(issue.number, issue.html_url, created=False, labels=labels)
            return None

        return self._call("list the open issues", go)

    def edit_issue(self, issue: IssueInfo, marker: str, title: str, body: str) -> IssueInfo:
        full = f"{body}\n\n{marker}\n"

        def edit() -> IssueInfo:
            self._repo.get_issue(issue.number).edit(title=title, body=full)
            return issue

        return self._call(f"edit issue #{issue.number}", edit)

    def open_issue(self, marker: str, title: str, body: str) -> IssueInfo:
        """Open the issue carrying ``marker`` (after a failed POST, only if it is not there yet)."""
        full = f"{body}\n\n{marker}\n"

        def create() -> IssueInfo:
            issue = self._repo.create_issue(title=title, body=full)
            return IssueInfo(issue.number, issue.html_url, created=True)

        return self._create("issue", lambda: self.find_issue(marker), create)

    def upsert_issue(self, marker: str, title: str, body: str) -> IssueInfo:
        """Edit the open issue carrying ``marker``, or open it; never a second one for the same marker."""
        existing = self.find_issue(marker)
        if existing is not None:
            return self.edit_issue(existing, marker, title, body)
        return self.open_issue(marker, title, body)

    # -- CI on a fix branch ---------------------------------------------------------------------------------
    def dispatch_workflow(self, workflow: int | str, ref: str, inputs: Mapping[str, str] | None = None) -> str:
        """Run ``workflow`` (its id, or its file name: ``selfix.yml``) on branch ``ref`` (``workflow_dispatch``),
        with ``inputs`` when given; the run's URL, or "" when the server does not say (one without
        ``return_run_details``). Needs ``actions: write``. Never retried: a lost answer would start the run
        twice."""

        def go() -> str:
            given = {"inputs": dict(inputs)} if inputs else {}
            run = self._repo.get_workflow(workflow).create_dispatch(ref, throw=True, return_run_details=True, **given)
            return str(getattr(run, "html_url", "") or "")

        return self._call(f"dispatch workflow {workflow} on {ref}", go)

    # -- artifacts ------------------------------------------------------------------------------------------
    def run_artifacts(self, run_id: int, name_pattern: str = "*") -> list[ArtifactInfo]:
        def go() -> list[ArtifactInfo]:
            found = []
            for art in self._repo.get_workflow_run(run_id).get_artifacts():
                if fnmatch.fnmatchcase(art.name, name_pattern):
                    found.append(
                        ArtifactInfo(art.id, art.name, art.size_in_bytes, bool(art.expired), art.archive_download_url)
                    )
            return found

        return self._call(f"list the artifacts of run {run_id}", go)

    def download_artifact(self, artifact: ArtifactInfo, dest: Path, limits: ExtractLimits | None = None) -> list[Path]:
        """Download the artifact's zip (size-capped while streaming) and extract it safely into ``dest``."""
        limits = limits or ExtractLimits()
        if artifact.expired:
            raise ArtifactRefused(f"artifact {artifact.name} has expired")
        if artifact.size_in_bytes > limits.max_archive_bytes:
            raise ArtifactRefused(f"artifact {artifact.name} is {artifact.size_in_bytes} bytes, over the cap")
        dest.mkdir(parents=True, exist_ok=True)
        archive = dest.parent / f".{dest.name}.zip"
        try:
            self._stream_to(artifact.archive_download_url, archive, limits.max_archive_bytes, artifact.name)
            return safe_extract(archive, dest, limits)
        except ArtifactRefused:
            shutil.rmtree(dest, ignore_errors=True)  # nothing half-extracted is left for anyone to read
            raise
        finally:
            archive.unlink(missing_ok=True)

    def _stream_to(self, url: str, path: Path, cap: int, name: str) -> None:
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/vnd.github+json"}
        api_host = urllib.parse.urlsplit(url).netloc
        try:
            for _hop in range(3):
                response = requests.get(url, headers=headers, timeout=self._timeout, allow_redirects=False, stream=True)
                if response.status_code in (301, 302, 303, 307, 308) and "location" in response.headers:
                    url = urllib.parse.urljoin(url, response.headers["location"])
                    if urllib.parse.urlsplit(url).netloc != api_host:
                        headers = {}  # the signed storage URL must not receive our token
                    response.close()
                    continue
                break
            with response:
                if response.status_code != 200:
                    raise GitHubError(
                        f"downloading artifact {name} failed with {response.status_code}",
                        response.status_code,
                    )
                total = 0
                with open(path, "wb") as handle:
                    for chunk in response.iter_content(64 * 1024):
                        total += len(chunk)
                        if total > cap:
                            raise ArtifactRefused(f"artifact {name} exceeds {cap} bytes while downloading")
                        handle.write(chunk)
        except requests.RequestException as exc:
            raise GitHubError(f"downloading artifact {name} failed: {exc}") from exc
