"""GitHub failures as ``SelfixError`` subclasses, so callers never see PyGithub or requests exceptions."""

from __future__ import annotations

from selfix_action.errors import SelfixError


class GitHubError(SelfixError):
    """A GitHub API call failed (after the retries the client allows itself)."""

    def __init__(self, message: str, status: int | None = None, server_message: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message  # GitHub's own ``message`` of the refusal, when it sent one


class GitHubRateLimited(GitHubError):
    """The API refused for rate limiting and the reset is further away than we are willing to wait."""

    def __init__(self, message: str, status: int | None = None, reset_at: float | None = None) -> None:
        super().__init__(message, status)
        self.reset_at = reset_at  # unix time of x-ratelimit-reset (or now + retry-after), when GitHub said


class ArtifactRefused(SelfixError):
    """An artifact archive that is too big, or holds an entry that is unsafe to extract."""
