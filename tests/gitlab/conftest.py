"""Fixtures for the GitLab client's tests: a fake GitLab REST v4 API and a client of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from selfix_action.gitlab.client import GitLabClient
from tests.helpers.fake_gitlab import FakeGitLab

TOKEN = "glpat-faketoken0123456789"


@pytest.fixture
def gitlab_api() -> Iterator[FakeGitLab]:
    server = FakeGitLab(token=TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def client(gitlab_api: FakeGitLab) -> GitLabClient:
    return GitLabClient(gitlab_api.url, gitlab_api.state.project_id, TOKEN, max_retries=2)
