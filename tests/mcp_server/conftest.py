"""A copy of examples/range_sum, a git repository of one commit, for the MCP server to work on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.projects import copy_example


@pytest.fixture
def range_sum(tmp_path: Path) -> Path:
    return copy_example("range_sum", tmp_path, git=True)
