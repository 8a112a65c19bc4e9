"""Shared fixtures: small real projects written to tmp_path and a sandbox over them."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples"


def write_project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def make_sandbox(tmp_path: Path) -> Iterator[Callable[..., PytestSandbox]]:
    made: list[PytestSandbox] = []

    def make(files: dict[str, str], wall_seconds: float = 60.0) -> PytestSandbox:
        repo = write_project(tmp_path / f"proj{len(made)}", files)
        sandbox = PytestSandbox(
            repo,
            [sys.executable, "-m", "pytest"],
            limits=Limits(wall_seconds=wall_seconds),
            scratch_parent=tmp_path,
        )
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()
