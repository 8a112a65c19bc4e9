"""The fork recipe of docs/ACTION.md does what the page says, with the inputs read from the page itself and the
environment the runner builds from action.yml: a fork pull request's failed tests are healed with no token,
the verified patch lands in the job summary and in `.selfix/report/`, and nothing reaches GitHub or origin. And
the README's Quickstart workflow runs the offline engine until its Anthropic key secret is set, then the LLM
engine after it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from selfix_action.action.settings import load_settings
from selfix_action.ci.request import REPORT_DIR, heal_request
from selfix_action.llm.factory import DEFAULT_MODELS
from tests.helpers.action import JUNIT, REPO, Repos, action_env, git, invoke, remote_branches, synthetic
from tests.helpers.fake_github import FakeGitHub

ACTION_MD = Path(__file__).resolve().parents[2] / "docs" / "ACTION.md"
README = ACTION_MD.parents[1] / "README.md"
_YAML_BLOCK = re.compile(r"^```ya?ml[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def fork_recipe_step() -> dict[str, Any]:
    """The selfix step of the docs' fork recipe (the one in report mode)."""
    steps = [
        step
        for block in _YAML_BLOCK.findall(ACTION_MD.read_text(encoding="utf-8"))
        if isinstance(data := yaml.safe_load(block), dict) and "jobs" in data
        for job in data["jobs"].values()
        for step in job.get("steps") or ()
        if str(step.get("uses", "")).startswith("selfix-action/selfix-action@")
        and (step.get("with") or {}).get("mode") == "report"
    ]
    assert len(steps) == 1, f"expected one report-mode selfix step in docs/ACTION.md, found {len(steps)}"
    return steps[0]


def test_fork_recipe_heals_with_no_token_and_publishes_nothing(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    step = fork_recipe_step()
    inputs = {key: str(value) for key, value in step["with"].items()}
    assert inputs["github_token"] == ""  # the recipe's point: no token at all reaches this job's selfix
    # The project's install is not what this checks (tests/sandbox covers setup_command): it would fetch from
    # the network and take a minute. The healer below stands in for the heal, as in the other action tests.
    assert inputs.pop("setup_command")
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    # actions/checkout of a pull_request event: GitHub's merge commit of the fork's branch.
    git(repos.workspace, "checkout", "-q", "feature/avg")
    git(repos.workspace, "commit", "-q", "--allow-empty", "-m", "Merge feature/avg into main")
    junit = repos.workspace / inputs["junit_paths"]
    junit.parent.mkdir(parents=True, exist_ok=True)
    junit.write_text(JUNIT)
    pull = {
        "number": number,
        "head": {"ref": "feature/avg", "sha": repos.feature_sha, "repo": {"full_name": "forker/octo-repo"}},
        "base": {"ref": "main"},
    }
    data = {"pull_request": pull, "repository": {"full_name": REPO, "default_branch": "main"}}
    env = action_env(tmp_path, fake, repos, "pull_request", data, **inputs)
    env.update(GITHUB_HEAD_REF="feature/avg", GITHUB_REF_NAME=f"{number}/merge")

    run = invoke(env, synthetic(True))

    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert fake.calls == []  # no token: not one API call, so nothing commented or opened
    assert remote_branches(repos) == {"main": repos.main_sha, "feature/avg": repos.feature_sha}
    patch = repos.workspace / REPORT_DIR / "patch.diff"
    assert "+    return 10" in patch.read_text(), "the verified patch is not in the report folder the recipe uploads"
    assert "return 10" in run.summary, "the job summary does not show the verified patch"


def readme_selfix_step() -> dict[str, Any]:
    """The selfix step of the README's Quickstart workflow."""
    steps = [
        step
        for block in _YAML_BLOCK.findall(README.read_text(encoding="utf-8"))
        if isinstance(data := yaml.safe_load(block), dict) and data.get("name") == "selfix"
        for job in data["jobs"].values()
        for step in job.get("steps") or ()
        if str(step.get("uses", "")).startswith("selfix-action/selfix-action@")
    ]
    assert len(steps) == 1, f"expected one selfix step in the README's workflows, found {len(steps)}"
    return steps[0]


def runner_env(tmp_path: Path, inputs: dict[str, Any], secrets: dict[str, str]) -> dict[str, str]:
    """The INPUT_* variables the runner gives the action: each `${{ secrets.NAME }}` evaluated, an unset secret
    as the empty string, as GitHub does."""
    env = {"GITHUB_WORKSPACE": str(tmp_path)}
    for name, value in inputs.items():
        text = re.sub(r"\$\{\{\s*secrets\.(\w+)\s*\}\}", lambda m: secrets.get(m.group(1), ""), str(value))
        env[f"INPUT_{name.upper()}"] = text
    return env


def test_readme_quickstart_heals_offline_until_the_key_secret_is_set(tmp_path: Path) -> None:
    """The README's workflow passes the Anthropic key from the repository's secrets; while the secret is unset the
    input is empty and the offline engine runs, and once it is set the engine is auto with Anthropic's default
    model, as the README says."""
    inputs = readme_selfix_step()["with"]
    assert inputs["anthropic_api_key"] == "${{ secrets.ANTHROPIC_API_KEY }}"

    unset = load_settings(runner_env(tmp_path, inputs, {}))
    assert unset.engine == "offline" and unset.anthropic_api_key.get_secret_value() == ""

    env = runner_env(tmp_path, inputs, {"ANTHROPIC_API_KEY": "sk-ant-test"})
    settings = load_settings(env)
    assert settings.engine == "auto"
    engine = heal_request(settings, env, (), "").engine
    assert (engine.provider, engine.api_key, engine.model) == ("anthropic", "sk-ant-test", None)
    readme = README.read_text(encoding="utf-8")
    assert f"`{DEFAULT_MODELS['anthropic']}` (Anthropic)" in readme and "`model` input" in readme
