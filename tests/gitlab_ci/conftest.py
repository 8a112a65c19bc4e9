"""Fixtures for the GitLab front end's tests: a fake GitLab API, a bare origin and the job's checkout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.action import HEALABLE, Repos, make_repos
from tests.helpers.fake_gitlab import FakeGitLab
from tests.helpers.gitlab_ci import GITLAB_TOKEN


@pytest.fixture
def gitlab_api() -> Iterator[FakeGitLab]:
    server = FakeGitLab(token=GITLAB_TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return make_repos(tmp_path, HEALABLE)
