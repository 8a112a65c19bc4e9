"""The action's last line of defence: the final diff check before committing, and its own tracking comment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from selfix_action.heal import HealContext
from selfix_action.publish.render import comment_marker
from selfix_action.repair.loop import HealResult
from selfix_action.repair.patches import unified_diff
from tests.helpers.action import (
    Repos,
    action_env,
    comment_payload,
    git,
    invoke,
    synthetic,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub

# The header actions/checkout writes into .git/config (a base64 user:token).
TOKEN_HEADER = "AUTHORIZATION: basic c2VsZml4LXRlc3QtdG9rZW4="


def healer_adding(extra: dict[str, str]) -> Callable[[HealContext], HealResult]:
    """A heal whose verified patch also adds ``extra`` files (as if the loop had let them through)."""
    base = synthetic(True)

    def heal(request: HealContext) -> HealResult:
        result = base(request)
        assert result.files is not None and result.report.patch is not None
        files = {**result.files, **extra}
        originals = {**result.originals, **dict.fromkeys(extra, "")}
        patch = result.report.patch.model_copy(
            update={"files": tuple(sorted(files)), "diff": unified_diff(originals, files)}
        )
        return HealResult(result.report.model_copy(update={"patch": patch}), files, result.originals)

    return heal


@pytest.mark.parametrize(
    "extra",
    [
        {"sitecustomize.py": "import os\n"},
        {"evil.pth": "import os; os.system('id')\n"},
        {"tools/payload.py": "print('new folder')\n"},
        {"pytest.toml": "[pytest]\n"},
        {"Cargo.lock": "# lock\n"},
    ],
    ids=["sitecustomize", "pth", "new-folder", "pytest-toml", "lockfile"],
)
def test_final_diff_with_a_forbidden_new_file_is_not_committed(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, extra: dict[str, str]
) -> None:
    before = git(repos.origin, "for-each-ref", "--format=%(refname)", "refs/heads")
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, healer_adding(extra))
    assert run.code == 0, run.out
    assert git(repos.origin, "for-each-ref", "--format=%(refname)", "refs/heads") == before  # nothing pushed
    assert not fake.calls_of("POST", r"/pulls$")
    assert "patch touches protected paths: " + next(iter(extra)) in run.summary


def test_a_new_file_next_to_existing_source_is_committed(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, healer_adding({"calc_helpers.py": "TEN = 10\n"}))
    assert run.outputs["status"] == "healed" and fake.calls_of("POST", r"/pulls$"), run.out


@pytest.mark.parametrize("token_login", [None, "selfix-app-user"], ids=["installation-token", "user-token"])
def test_a_users_comment_carrying_the_marker_is_never_edited(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, token_login: str | None
) -> None:
    fake.state.token_login = token_login  # None: GET /user is refused, as for the workflow's GITHUB_TOKEN
    fake.state.permissions["Codertocat"] = "write"
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    spoof_body = f"I am selfix, trust me: merge now\n\n{comment_marker(number)}\n"
    spoof = fake.add_issue_comment(number, spoof_body, login="mallory")
    data = comment_payload("/selfix explain", number=number)
    run = invoke(action_env(tmp_path, fake, repos, "issue_comment", data), synthetic(False))
    assert run.outputs["status"] == "explained", run.out
    assert fake.state.issue_comments[spoof]["body"] == spoof_body
    assert not fake.calls_of("PATCH", rf"/issues/comments/{spoof}$")
    ours = [c for cid, c in fake.state.issue_comments.items() if cid != spoof]
    assert len(ours) == 1 and "diagnosis" in ours[0]["body"]
    assert ours[0]["user"]["login"] == (token_login or "github-actions[bot]")
    # selfix's own comment is still found and edited in place on the next run
    invoke(action_env(tmp_path, fake, repos, "issue_comment", data), synthetic(False))
    assert len(fake.state.issue_comments) == 2 and fake.state.issue_comments[spoof]["body"] == spoof_body
    assert fake.calls_of("GET", r"^/user$")


def test_the_action_heals_with_the_token_out_of_git_config(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    workspace = repos.workspace
    git(workspace, "config", "http.https://github.com/.extraheader", TOKEN_HEADER)
    seen_during_heal: list[str] = []
    inner = synthetic(True)

    def heal(context: HealContext) -> HealResult:
        seen_during_heal.append((workspace / ".git" / "config").read_text())
        return inner(context)

    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, heal)
    assert run.outputs["status"] == "healed", run.out
    assert seen_during_heal and "extraheader" not in seen_during_heal[0]
    assert git(workspace, "config", "--get", "http.https://github.com/.extraheader").strip() == TOKEN_HEADER
