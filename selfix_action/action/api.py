"""The run's GitHub API client, made on first use (a run without a token never needs one)."""

from __future__ import annotations

from selfix_action.action.settings import Settings
from selfix_action.errors import InputError
from selfix_action.github.client import GitHubClient


class Api:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: GitHubClient | None = None

    @property
    def available(self) -> bool:
        """A token and a repository: selfix can read and publish."""
        return bool(self.settings.github_token.get_secret_value() and self.settings.repository)

    @property
    def created(self) -> bool:
        return self._client is not None

    @property
    def client(self) -> GitHubClient:
        if self._client is None:
            token = self.settings.github_token.get_secret_value()
            if not token or not self.settings.repository:
                raise InputError("github_token and GITHUB_REPOSITORY are needed to talk to GitHub")
            self._client = GitHubClient(
                token,
                self.settings.repository,
                self.settings.api_url,
                write_interval=self.settings.api_write_interval,
                max_rate_limit_wait=self.settings.api_max_rate_limit_wait,
                backoff=self.settings.api_backoff,
            )
        return self._client
