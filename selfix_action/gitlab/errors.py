"""GitLab failures as ``SelfixError`` subclasses, so callers never see python-gitlab or requests exceptions."""

from __future__ import annotations

from selfix_action.errors import SelfixError


class GitLabError(SelfixError):
    """A GitLab API call failed (after the retries python-gitlab was configured to make)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitLabRateLimited(GitLabError):
    """429 Too Many Requests, still refused after the configured retries."""
