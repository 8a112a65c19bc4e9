"""The loop guards, end to end against the fake API: a cap on open fix PRs (``max_open_prs``), an opt-out label
(``opt_out_label``) on the failing PR or on selfix's own PR or issue, and no heal of a run selfix's own push caused."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from selfix_action.ci.gitops import AUTHOR_EMAIL, TRAILER, fingerprint
from selfix_action.heal import HealContext
from tests.helpers.action import (
    F2P,
    REPO,
    WEBHOOKS,
    Repos,
    action_env,
    comment_payload,
    git,
    invoke,
    remote_branches,
    synthetic,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub

R = f"/repos/{REPO}"
FIX_BRANCH = f"selfix/{fingerprint('feature/avg', [F2P])}"


def api(fake: FakeGitHub) -> list[tuple[str, str]]:
    return [(c.method, c.path.removeprefix(R)) for c in fake.calls]


def open_other_fix_prs(fake: FakeGitHub, repos: Repos, count: int) -> list[int]:
    """Fix PRs selfix opened earlier for other failures."""
    return [
        fake.add_pull(head_ref=f"selfix/{index:012x}", head_sha=repos.main_sha, base_ref="main")
        for index in range(count)
    ]


def run_from_pull_payload(repos: Repos, number: int) -> dict[str, Any]:
    """The recorded ``workflow_run`` of a pull request (octokit's example), adapted to this repository."""
    data = json.loads((WEBHOOKS / "workflow_run.completed.with-pull-requests.payload.json").read_text())
    data["repository"].update(full_name=REPO, default_branch="main")
    run = data["workflow_run"]
    run.update(id=4242, head_sha=repos.feature_sha, head_branch="feature/avg", conclusion="failure")
    run["head_repository"]["full_name"] = REPO
    (pull,) = run["pull_requests"]
    pull.update(number=number, url=f"https://api.github.com/repos/{REPO}/pulls/{number}")
    pull["head"].update(ref="feature/avg", sha=repos.feature_sha)
    return data


# -- max_open_prs ----------------------------------------------------------------------------------------------
def test_at_the_cap_a_new_fix_is_one_comment_on_the_failing_pr(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    others = open_other_fix_prs(fake, repos, 3)
    failing = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    env = action_env(tmp_path, fake, repos, "workflow_run", run_from_pull_payload(repos, failing))
    run = invoke(env, synthetic(True))
    assert (run.code, run.outputs["status"], run.outputs["pr_url"]) == (0, "healed", ""), run.out
    assert fake.writes() == [("POST", f"{R}/issues/{failing}/comments")]  # no PR, no dispatch
    assert FIX_BRANCH not in remote_branches(repos)  # nothing pushed for a PR that is not opened
    (comment,) = fake.state.issue_comments.values()
    body = comment["body"]
    assert "3 selfix fix pull requests are open" in body and "`max_open_prs` is 3" in body
    assert ", ".join(f"#{n}" for n in sorted(others, reverse=True)) in body
    assert "`max_open_prs: 5`" in body and ".github/selfix.yml" in body  # how to raise it
    assert "+    return 10" in body  # the verified fix is not lost
    assert "selfix: not opening a fix PR: 3 selfix fix PRs are open" in run.out
    # the same failure again: the one comment is edited, still no PR
    fake.calls.clear()
    assert invoke(env, synthetic(True)).outputs["status"] == "healed"
    assert fake.writes() == [("PATCH", f"{R}/issues/comments/{comment['id']}")]
    assert len(fake.state.issue_comments) == 1 and len(fake.state.pulls) == 4


def test_at_the_cap_without_a_pull_the_comment_goes_on_the_commit(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    open_other_fix_prs(fake, repos, 2)
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data, max_open_prs="2"), synthetic(True))
    assert run.outputs["status"] == "healed", run.out
    assert fake.writes() == [("POST", f"{R}/commits/{repos.feature_sha}/comments")]
    assert "`max_open_prs` is 2" in next(iter(fake.state.commit_comments.values()))["body"]
    assert "no fix PR opened: 2 selfix fix PRs are open" in run.summary


def test_under_the_cap_other_prs_do_not_count(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    """Only open selfix/ branches of this repository count: not people's PRs, not a fork's selfix/ branch."""
    open_other_fix_prs(fake, repos, 2)
    fake.add_pull(head_ref="feature/other", head_sha=repos.main_sha, base_ref="main")
    fake.add_pull(head_ref="selfix/0123456789ab", head_sha=repos.main_sha, base_ref="main", head_repo="evil/octo")
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data), synthetic(True))
    assert run.outputs["status"] == "healed", run.out
    assert len(fake.calls_of("POST", r"/pulls$")) == 1 and not fake.state.commit_comments


def test_at_the_cap_the_open_pr_of_the_same_failure_is_still_updated(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    assert invoke(env, synthetic(True)).outputs["status"] == "healed"
    open_other_fix_prs(fake, repos, 2)  # now 3 open, ours among them
    fake.calls.clear()
    run = invoke(env, synthetic(True))
    assert run.outputs["pr_url"] == f"https://github.com/{REPO}/pull/101", run.out
    assert fake.writes() == [("PATCH", f"{R}/pulls/101")]


@pytest.mark.parametrize("how", ["input", "config file"])
def test_the_cap_can_be_raised_or_turned_off(tmp_path: Path, fake: FakeGitHub, repos: Repos, how: str) -> None:
    open_other_fix_prs(fake, repos, 3)
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    if how == "input":
        env = action_env(tmp_path, fake, repos, "workflow_run", data, max_open_prs="0")  # 0: no cap
    else:
        (repos.workspace / ".github").mkdir()
        (repos.workspace / ".github" / "selfix.yml").write_text("max_open_prs: 5\n")
        env = action_env(tmp_path, fake, repos, "workflow_run", data)
    run = invoke(env, synthetic(True))
    assert run.outputs["pr_url"] == f"https://github.com/{REPO}/pull/104", run.out
    assert FIX_BRANCH in remote_branches(repos)


# -- opt_out_label ---------------------------------------------------------------------------------------------
def test_a_failing_pr_with_the_opt_out_label_is_left_alone(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    fake.label(number, "bug", "selfix:skip")
    calls: list[HealContext] = []
    env = action_env(tmp_path, fake, repos, "workflow_run", run_from_pull_payload(repos, number))
    run = invoke(env, synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "skipped"), run.out
    assert f"selfix: skipped: pull request #{number} has the 'selfix:skip' label (opt_out_label)" in run.out
    assert calls == [] and api(fake) == [("GET", f"/pulls/{number}")]  # read the labels; nothing downloaded
    assert git(repos.workspace, "rev-parse", "HEAD") == repos.main_sha  # nothing checked out


def test_a_selfix_command_on_a_labelled_pr_does_nothing(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "write"
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = comment_payload("/selfix fix", number=number)
    label = copy.deepcopy(data["issue"]["labels"][0])  # the recorded label's shape
    data["issue"]["labels"].append({**label, "name": "hands-off", "id": label["id"] + 1})
    calls: list[HealContext] = []
    env = action_env(tmp_path, fake, repos, "issue_comment", data, opt_out_label="hands-off")
    run = invoke(env, synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "skipped"), run.out
    assert f"pull request #{number} has the 'hands-off' label" in run.out
    assert calls == [] and fake.calls == []  # no reaction, no comment: not a word on the PR


def test_the_default_label_does_not_count_when_another_is_chosen(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    fake.label(number, "selfix:skip")
    env = action_env(tmp_path, fake, repos, "workflow_run", run_from_pull_payload(repos, number), opt_out_label="x")
    assert invoke(env, synthetic(True)).outputs["status"] == "healed"


def test_the_fix_pr_with_the_opt_out_label_is_no_longer_updated(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    invoke(env, synthetic(True))
    fake.label(101, "selfix:skip")  # the maintainer takes the fix PR over
    heads = remote_branches(repos)
    fake.calls.clear()
    run = invoke(env, synthetic(True))
    assert run.code == 0, run.out
    assert fake.writes() == [] and remote_branches(repos) == heads
    assert "selfix: left alone: the fix PR #101 has the 'selfix:skip' label" in run.out


def test_a_selfix_command_hears_that_the_fix_pr_is_left_alone(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "write"
    failing = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    env = action_env(tmp_path, fake, repos, "issue_comment", comment_payload("/selfix fix", number=failing))
    invoke(env, synthetic(True))
    fix_pr = failing + 1
    fake.label(fix_pr, "selfix:skip")
    fake.calls.clear()
    run = invoke(env, synthetic(True))
    assert run.code == 0, run.out
    (comment,) = fake.state.issue_comments.values()
    assert not fake.calls_of("PATCH", r"/pulls/") and FIX_BRANCH in remote_branches(repos)
    assert f"the fix PR #{fix_pr} has the 'selfix:skip' label (opt_out_label): remove it" in comment["body"]


def test_the_escalation_issue_with_the_opt_out_label_is_no_longer_edited(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    invoke(env, synthetic(False))
    (issue,) = fake.state.issues
    fake.label(issue, "selfix:skip")
    fake.calls.clear()
    run = invoke(env, synthetic(False))
    assert (run.code, run.outputs["status"]) == (0, "not_healed"), run.out
    assert fake.writes() == [] and len(fake.state.issues) == 1
    assert f"left alone: the escalation issue #{issue} has the 'selfix:skip' label" in run.summary


# -- no heal of selfix's own push ------------------------------------------------------------------------------
def test_the_run_of_a_commit_selfix_pushed_is_not_healed(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    """commit mode pushes onto the PR branch; with a token that starts workflows, that push's failed run comes
    back as a workflow_run on the same branch: selfix recognises its own commit and stops there."""
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    first = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    assert invoke(action_env(tmp_path, fake, repos, "workflow_run", first, mode="commit"), synthetic(True)).code == 0
    tip = remote_branches(repos)["feature/avg"]
    name, email, message = git(repos.origin, "log", "-1", "--format=%an%x00%ae%x00%B", tip).split("\0")
    second = workflow_run_payload(tip, "feature/avg", run_id=4243, pulls=(number,))
    second["workflow_run"]["head_commit"].update(
        id=tip, message=message, author={"name": name, "email": email}, committer={"name": name, "email": email}
    )
    fake.calls.clear()
    calls: list[HealContext] = []
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", second, mode="commit"), synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "skipped"), run.out
    assert f"selfix: skipped: the failed run is of commit {tip[:12]}, which selfix pushed" in run.out
    assert calls == [] and fake.calls == [] and remote_branches(repos)["feature/avg"] == tip


def test_a_selfix_commit_is_known_by_its_trailer_alone(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    """Squashed or re-committed by GitHub (committer noreply@github.com), the trailer still says whose it is."""
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    data["workflow_run"]["head_commit"]["message"] = f"selfix: fix test_limit\n\n{TRAILER}: 0123456789ab\n"
    assert data["workflow_run"]["head_commit"]["author"]["email"] != AUTHOR_EMAIL
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data), synthetic(True))
    assert run.outputs["status"] == "skipped" and "fingerprint trailer" in run.out and fake.calls == []


def test_a_people_commit_quoting_selfix_is_healed(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    data["workflow_run"]["head_commit"]["message"] = f"revert the selfix fix (it had {TRAILER}: in it)"
    assert (
        invoke(action_env(tmp_path, fake, repos, "workflow_run", data), synthetic(True)).outputs["status"] == "healed"
    )


def push_step_env(tmp_path: Path, fake: FakeGitHub, repos: Repos, branch: str, head_commit: dict[str, Any]) -> dict:
    git(repos.workspace, "checkout", "-q", "feature/avg")  # actions/checkout of the pushed commit
    data = json.loads((WEBHOOKS / "push.payload.json").read_text())  # octokit's recorded push
    data["repository"].update(full_name=REPO, default_branch="main")
    data.update(ref=f"refs/heads/{branch}", after=repos.feature_sha, head_commit=head_commit)
    env = action_env(tmp_path, fake, repos, "push", data)
    env.update(GITHUB_REF_NAME=branch, GITHUB_SHA=repos.feature_sha)
    return env


def test_a_failed_step_after_selfix_own_push_is_not_healed(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    head = copy.deepcopy(workflow_run_payload(repos.feature_sha, "x")["workflow_run"]["head_commit"])
    head.update(id=repos.feature_sha, author={"name": "selfix", "email": AUTHOR_EMAIL})
    calls: list[HealContext] = []
    run = invoke(push_step_env(tmp_path, fake, repos, "feature/avg", head), synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "skipped"), run.out
    assert "is selfix's own: its author is selfix" in run.out and calls == [] and fake.calls == []


def test_a_failed_step_on_a_selfix_branch_is_not_healed(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    head = copy.deepcopy(workflow_run_payload(repos.feature_sha, "x")["workflow_run"]["head_commit"])
    run = invoke(push_step_env(tmp_path, fake, repos, FIX_BRANCH, head), synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "skipped"), run.out
    assert "selfix's own fix branch" in run.out and fake.calls == []
