"""The release workflow (image to ghcr.io, the tag's action.yml pointed at it, the major tag moved) and the weekly
lock refresh: actionlint (with shellcheck on the run: scripts) and zizmor (no finding at all, with the repository's
zizmor.yml) pass them and the composite action; both hold minimal job-level permissions, pinned actions and no
persisted credentials."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.packaging import COMPOSITE_ACTION, REPO_ROOT, run, tool

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
REFRESH = WORKFLOWS / "refresh-lock.yml"


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _triggers(data: dict[str, Any]) -> dict[str, Any]:
    return data.get("on", data.get(True))  # PyYAML reads the key `on` as True


def test_actionlint_passes_the_release_workflows() -> None:
    proc = run([tool("actionlint"), "-no-color", str(RELEASE), str(REFRESH)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _zizmor(*paths: Path) -> list[dict[str, Any]]:
    argv = [tool("zizmor"), "--offline", "--no-progress", "--config", str(REPO_ROOT / "zizmor.yml")]
    proc = run([*argv, "--format", "json", *map(str, paths)])
    assert proc.returncode == 0 or 10 <= proc.returncode <= 14, proc.stderr[-3000:]  # 10-14: findings
    return [finding for finding in json.loads(proc.stdout) if not finding.get("ignored")]


def test_zizmor_finds_nothing_in_the_release_workflows_and_the_composite_action() -> None:
    findings = _zizmor(RELEASE, REFRESH, COMPOSITE_ACTION)
    assert findings == [], [(f["ident"], f["determinations"]["severity"], f["desc"]) for f in findings]


def test_zizmor_catches_an_unsafe_release(tmp_path: Path) -> None:
    """The check can fail: the same workflow with its checkout pinned to a tag is reported."""
    text = RELEASE.read_text(encoding="utf-8")
    unsafe = re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@v4", text)
    path = tmp_path / "release.yml"
    path.write_text(unsafe, encoding="utf-8")
    assert "unpinned-uses" in {finding["ident"] for finding in _zizmor(path)}


@pytest.mark.parametrize(
    ("path", "permissions"),
    [
        (RELEASE, {"contents": "write", "packages": "write"}),
        (REFRESH, {"contents": "write", "pull-requests": "write"}),
    ],
)
def test_workflow_permissions_pins_and_credentials(path: Path, permissions: dict[str, str]) -> None:
    data = _load(path)
    assert data["permissions"] == {}, "no permission at workflow level"
    (job,) = data["jobs"].values()
    assert job["permissions"] == permissions
    assert isinstance(job["timeout-minutes"], int)
    for step in job["steps"]:
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
            if step["uses"].startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
        assert "${{" not in step.get("run", ""), "inputs reach scripts through env only"


def test_release_runs_on_version_tags_and_rewrites_the_action() -> None:
    data = _load(RELEASE)
    assert _triggers(data) == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    scripts = "\n".join(step.get("run", "") for step in data["jobs"]["release"]["steps"])
    assert "python3 packaging/release_image.py action.yml" in scripts
    assert re.search(r'git tag --force "\$major"', scripts)
    assert "docker push" in scripts and "ghcr.io/" in scripts


def test_release_workflows_pass_github_workflow_schema() -> None:
    proc = run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(RELEASE), str(REFRESH)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
