"""Protected paths and new-file rules (``engine.paths``), shared by the loop and the action's final diff check."""

from __future__ import annotations

import pytest

from selfix_action.repair.paths import patch_violations, protected_reason

EXISTING = {"pkg/core.py", "pkg/__init__.py", "main.py", "tests/test_core.py", "docs/index.md", "pyproject.toml"}


@pytest.mark.parametrize(
    "path",
    [
        "pytest.toml",
        ".pytest.ini",
        "sub/pytest.toml",
        "yarn.lock",
        "Cargo.lock",
        "package-lock.json",
        "pnpm-lock.yaml",
        "go.sum",
        "requirements-dev.txt",
        "requirements.in",
        "pkg/sitecustomize.py",
        "usercustomize.py",
        "pkg/hook.pth",
    ],
)
def test_newly_protected_files(path: str) -> None:
    assert protected_reason(path) is not None


@pytest.mark.parametrize(
    ("files", "refused"),
    [
        (["pkg/core.py"], []),
        (["pkg/helpers.py"], []),  # new file in a folder that already holds source
        (["main_helpers.py"], []),  # the root holds source too
        (["scripts/run.py"], ["scripts/run.py"]),  # a new folder
        (["docs/conf.py"], ["docs/conf.py"]),  # a folder without source
        (["pkg/sub/new.py"], ["pkg/sub/new.py"]),  # a new sub-folder
        (["sitecustomize.py"], ["sitecustomize.py"]),
        (["pkg/core.py", "x.pth"], ["x.pth"]),
    ],
)
def test_patch_violations_for_new_files(files: list[str], refused: list[str]) -> None:
    assert [p for p, _ in patch_violations(files, EXISTING)] == refused


def test_patch_violations_keeps_user_patterns() -> None:
    assert patch_violations(["pkg/core.py"], EXISTING, ["pkg/*"]) == [("pkg/core.py", "protected by pattern 'pkg/*'")]
