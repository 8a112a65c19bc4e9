"""Fixtures for the action's integration tests: a fake GitHub API, a bare ``origin`` and a workspace clone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.action import HEALABLE, REPO, Repos, make_repos
from tests.helpers.fake_github import FakeGitHub


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(REPO, "main").start()
    yield server
    server.stop()


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return make_repos(tmp_path, HEALABLE)
