"""``selfix action`` end to end: real PyGithub client, local fake GitHub API, local bare ``origin``."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.ci.gitops import TRAILER, fingerprint
from selfix_action.heal import HealContext
from tests.helpers.action import (
    F2P,
    HEALABLE,
    REPO,
    UNHEALABLE,
    Repos,
    action_env,
    comment_payload,
    git,
    invoke,
    junit_zip,
    make_repos,
    remote_branches,
    synthetic,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub


def test_workflow_run_failure_opens_fix_pr(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.add_artifact(4242, "junit-results", junit_zip())
    calls: list[HealContext] = []
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, synthetic(True, calls))
    assert run.code == 0, run.out
    assert run.outputs["status"] == "healed"
    fp = fingerprint("feature/avg", [F2P])
    branch = f"selfix/{fp}"
    assert fake.writes() == [
        ("POST", f"/repos/{REPO}/actions/workflows/2823525/dispatches"),  # CI on the fix branch, before the PR
        ("POST", f"/repos/{REPO}/pulls"),
        ("POST", f"/repos/{REPO}/issues/101/labels"),
    ]
    (dispatch,) = fake.state.dispatches
    assert (dispatch["workflow"], dispatch["ref"]) == ("2823525", branch)
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert pr["base"] == "feature/avg" and pr["head"] == branch
    run_link = f"[this run](https://github.com/{REPO}/actions/runs/{dispatch['run_id']}) verifies this fix"
    assert run_link in pr["body"]
    assert F2P.rsplit("::", 1)[1] in pr["title"]
    assert run.outputs["pr_url"] == f"https://github.com/{REPO}/pull/101"
    # the JUnit report came from the artifact, through the redirect, without our token at the blob host
    assert [p.name for p in calls[0].junit] == ["junit.xml"], run.out
    assert fake.blob_auth_headers == [None]
    heads = remote_branches(repos)
    assert heads["feature/avg"] == repos.feature_sha  # the failing branch itself is untouched
    msg = git(repos.origin, "log", "-1", "--format=%B", heads[branch])
    assert f"{TRAILER}: {fp}" in msg
    assert git(repos.origin, "show", f"{heads[branch]}:calc.py").startswith("def limit():\n    return 10")
    assert "::error file=" not in run.out or "title=selfix" in run.out
    assert "# selfix: healed" in run.summary


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (403, "the token needs `actions: write`"),
        (422, "the workflow has no `workflow_dispatch` trigger"),
        (204, "[the runs of `selfix/"),
    ],
)
def test_ci_on_the_fix_branch_when_it_cannot_be_linked(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, status: int, says: str
) -> None:
    """A refused dispatch never stops the PR; the PR says why no run verifies it (or where the runs are)."""
    fake.state.dispatch_status = status
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    body = fake.calls_of("POST", r"/pulls$")[0].body["body"]
    assert "**CI on this branch:**" in body and says in body
    assert len(fake.state.dispatches) == (1 if status == 204 else 0)


def test_ci_on_fix_branch_off_dispatches_nothing(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    env = action_env(tmp_path, fake, repos, "workflow_run", data, ci_on_fix_branch="off")
    run = invoke(env, synthetic(True))
    assert run.outputs["status"] == "healed" and not fake.state.dispatches
    assert "starts no workflow" in fake.calls_of("POST", r"/pulls$")[0].body["body"]


def test_a_failed_run_on_selfix_own_fix_branch_is_skipped(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "selfix/abc123"))
    run = invoke(env, synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "skipped") and "own fix branch" in run.out
    assert fake.calls == []


def test_not_healed_posts_one_escalation_comment_and_no_pr(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    env = action_env(tmp_path, fake, repos, "workflow_run", data)
    first = invoke(env, synthetic(False))
    assert first.outputs["status"] == "not_healed" and first.code == 0, first.out
    assert fake.writes() == [("POST", f"/repos/{REPO}/issues/{number}/comments")]
    assert not fake.calls_of("POST", r"/pulls$")
    (comment,) = fake.state.issue_comments.values()
    assert "could not heal" in comment["body"] and "/actions/runs/9001" in comment["body"]
    # the same failure again: the comment is edited, not duplicated
    second = invoke(env, synthetic(False))
    assert second.outputs["status"] == "not_healed"
    assert fake.writes()[1:] == [("PATCH", f"/repos/{REPO}/issues/comments/{comment['id']}")]
    assert len(fake.state.issue_comments) == 1
    assert remote_branches(repos).keys() == {"main", "feature/avg"}  # nothing pushed


def test_not_healed_without_a_pull_opens_one_issue_per_failure(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    # Someone else's issue quoting selfix's marker is never taken over.
    fp = fingerprint("feature/avg", [F2P])
    theirs = fake.add_issue("look", f"copied <!-- selfix:escalation {fp} -->", login="mallory")
    first = invoke(env, synthetic(False))
    assert first.outputs["status"] == "not_healed", first.out
    assert fake.writes() == [("POST", f"/repos/{REPO}/issues")], first.summary
    ours = max(fake.state.issues)
    assert ours != theirs and fake.state.issues[theirs]["body"].startswith("copied")
    assert f"selfix:escalation {fp}" in fake.state.issues[ours]["body"]
    assert f"opened the escalation issue #{ours}" in first.summary
    second = invoke(env, synthetic(False))  # the same failure again: the issue is edited, not repeated
    assert fake.writes()[1:] == [("PATCH", f"/repos/{REPO}/issues/{ours}")]
    assert len(fake.state.issues) == 2 and not fake.state.commit_comments
    assert f"updated the escalation issue #{ours}" in second.summary


def test_escalation_falls_back_to_a_commit_comment_without_issue_rights(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    fake.fail("POST", r"/issues$", status=403, times=5, body={"message": "Resource not accessible by integration"})
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, synthetic(False))
    assert run.outputs["status"] == "not_healed" and run.code == 0, run.out
    assert [w for w in fake.writes() if w[0] == "POST"][-1] == (
        "POST",
        f"/repos/{REPO}/commits/{repos.feature_sha}/comments",
    )
    assert not fake.state.issues and len(fake.state.commit_comments) == 1
    assert "could not open an escalation issue" in run.summary


def test_second_run_for_same_failure_updates_the_pr(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    assert invoke(env, synthetic(True)).outputs["status"] == "healed"
    before = remote_branches(repos)
    run = invoke(env, synthetic(True))
    assert run.outputs["status"] == "healed", run.out
    assert len(fake.calls_of("POST", r"/pulls$")) == 1
    assert fake.calls_of("PATCH", r"/pulls/101$")  # the existing PR body is refreshed instead
    assert remote_branches(repos) == before  # the same fix: nothing pushed again


def test_refuses_to_overwrite_a_branch_selfix_did_not_create(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    branch = f"selfix/{fingerprint('feature/avg', [F2P])}"
    git(repos.workspace, "push", "-q", "origin", f"{repos.main_sha}:refs/heads/{branch}")
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, synthetic(True))
    assert remote_branches(repos)[branch] == repos.main_sha
    assert not fake.calls_of("POST", r"/pulls$")
    assert "not created by selfix" in fake.calls_of("POST", r"/comments$")[0].body["body"], run.out


def test_fork_run_is_not_pushed_to(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(
        head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main", head_repo="evil/octo-repo"
    )
    data = workflow_run_payload(repos.feature_sha, "feature/avg", head_repo="evil/octo-repo")
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data), synthetic(True))
    assert run.outputs["status"] == "healed"
    assert remote_branches(repos).keys() == {"main", "feature/avg"}
    assert fake.writes() == [("POST", f"/repos/{REPO}/issues/{number}/comments")]
    assert "```diff" in fake.calls_of("POST", r"/comments$")[0].body["body"]


def test_other_conclusions_are_skipped(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    data = workflow_run_payload(repos.feature_sha, "feature/avg", conclusion="success")
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data), synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "skipped")
    assert fake.calls == []


def _comment_env(tmp_path: Path, fake: FakeGitHub, repos: Repos, body: str, **kw: str) -> tuple[dict[str, str], int]:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    login = kw.pop("login", "Codertocat")
    data = comment_payload(body, login=login, user_type=kw.pop("user_type", "User"), number=number)
    return action_env(tmp_path, fake, repos, "issue_comment", data, **kw), number


def test_comment_fix_acknowledges_and_edits_one_tracking_comment(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    fake.state.permissions["Codertocat"] = "write"
    env, number = _comment_env(tmp_path, fake, repos, "/selfix fix the limit should be ten")
    calls: list[HealContext] = []
    run = invoke(env, synthetic(True, calls))
    assert run.outputs["status"] == "healed", run.out
    assert calls[0].hint == "the limit should be ten"
    assert fake.state.reactions == [(555, "eyes")]
    assert fake.writes() == [
        ("POST", f"/repos/{REPO}/issues/comments/555/reactions"),
        ("POST", f"/repos/{REPO}/issues/{number}/comments"),
        ("POST", f"/repos/{REPO}/pulls"),
        ("POST", f"/repos/{REPO}/issues/{number + 1}/labels"),
        ("PATCH", f"/repos/{REPO}/issues/comments/{next(iter(fake.state.issue_comments))}"),
    ]
    assert len(fake.state.issue_comments) == 1
    assert f"#{number + 1}" in next(iter(fake.state.issue_comments.values()))["body"]
    assert fake.calls_of("POST", r"/pulls$")[0].body["base"] == "feature/avg"


@pytest.mark.parametrize("permission", ["read", "triage", None])
def test_unauthorized_commenter_is_refused(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, permission: str | None
) -> None:
    if permission:
        fake.state.permissions["Codertocat"] = permission
    calls: list[HealContext] = []
    env, _ = _comment_env(tmp_path, fake, repos, "/selfix fix")
    run = invoke(env, synthetic(True, calls))
    assert run.outputs["status"] == "skipped" and calls == []
    assert fake.writes() == [("POST", f"/repos/{REPO}/issues/comments/555/reactions")]
    assert fake.state.reactions == [(555, "confused")]


def test_bot_suffix_is_not_trusted_unless_listed(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["evil[bot]"] = "admin"  # even a permission answer does not make a name trusted
    calls: list[HealContext] = []
    env, _ = _comment_env(tmp_path, fake, repos, "/selfix fix", login="evil[bot]", user_type="User")
    run = invoke(env, synthetic(True, calls))
    assert run.outputs["status"] == "skipped" and calls == []
    assert not fake.calls_of("GET", "permission")
    assert fake.state.reactions == [(555, "confused")]


def test_listed_bot_is_trusted(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    calls: list[HealContext] = []
    env, _ = _comment_env(
        tmp_path, fake, repos, "/selfix explain", login="renovate[bot]", user_type="Bot", allowed_bots="renovate[bot]"
    )
    run = invoke(env, synthetic(False, calls))
    assert run.outputs["status"] == "explained" and len(calls) == 1
    assert "diagnosis" in next(iter(fake.state.issue_comments.values()))["body"]


def test_api_500s_and_rate_limit_do_not_duplicate(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "admin"
    env, number = _comment_env(tmp_path, fake, repos, "/selfix fix")
    fake.fail("GET", r"/pulls/\d+$", 500, times=2)  # retried by the client
    fake.fail("POST", rf"/issues/{number}/comments$", 502, after_apply=True)  # created, but the answer was lost
    fake.fail("POST", r"/pulls$", 500, after_apply=True)  # created, but the answer was lost
    fake.rate_limit("PATCH", r"/issues/comments/\d+$", reset_in=1)
    run = invoke(env, synthetic(True))
    assert run.outputs["status"] == "healed", run.out
    assert len(fake.state.pulls) == 2 and len(fake.state.issue_comments) == 1
    assert len(fake.calls_of("POST", r"/pulls$")) == 1
    assert len(fake.calls_of("POST", rf"/issues/{number}/comments$")) == 1
    assert len(fake.calls_of("PATCH", r"/issues/comments/")) == 2  # the rate-limited edit, then the retry


def test_api_down_is_an_error_without_duplicates(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "write"
    env, _ = _comment_env(tmp_path, fake, repos, "/selfix fix")
    fake.fail("POST", r"/pulls$", 500, times=99)
    run = invoke(env, synthetic(True))
    assert (run.code, run.outputs["status"]) == (1, "error")
    assert len(fake.state.issue_comments) == 1
    assert "error" in next(iter(fake.state.issue_comments.values()))["body"]


@pytest.mark.slow
def test_real_heal_end_to_end(tmp_path: Path, fake: FakeGitHub) -> None:
    """No stand-in: the offline engine heals the project in the sandbox, then a PR is opened."""
    repos = make_repos(tmp_path, HEALABLE)
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env)
    assert run.outputs["status"] == "healed", run.out
    assert Path(run.outputs["patch_path"]).read_text().count("+    return 10") == 1
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert pr["head"].startswith("selfix/")
    # Only the failing test checks the edited line: `medium`, so a draft whose body leads with that evidence.
    assert pr["draft"] is True and run.outputs["publish_action"] == "draft_pr"
    assert pr["body"].startswith("## selfix: a patch that passes, with medium confidence\n\n**Evidence against")
    # The body says what held and what was verified: the root cause, the tests, the cost and the run.
    assert "**Root cause:** the bug is in `limit`" in pr["body"]
    assert "### Hypotheses" in pr["body"] and "### Tests" in pr["body"] and "cost: $0.0000" in pr["body"]
    assert "held" in pr["body"] and "dropped: healed" not in pr["body"]
    assert "**Checked:**" in pr["body"] and "whole suite" in pr["body"]
    # The heal's progress is in the log as it runs, one group per step, every line inside a block that runs no
    # workflow command.
    groups: dict[str, list[str]] = {}
    title, token = "", ""
    for line in run.out.splitlines():
        if line.startswith("::group::"):
            title, token = line.removeprefix("::group::"), ""
        elif line.startswith("::stop-commands::"):
            token = line.removeprefix("::stop-commands::")
        elif token and line == f"::{token}::":
            token = ""
        elif line.startswith("[selfix "):
            assert token, f"a progress line outside a stop-commands block: {line}"
            groups.setdefault(title, []).append(line)
    assert any("reproduce:" in line for line in groups["selfix: reproduce the failure"])
    assert any("verify:" in line for line in groups["selfix: hypotheses and candidates"])
    assert any("outcome:" in line for line in groups["selfix: outcome"])


@pytest.mark.slow
def test_real_heal_not_healed_escalates(tmp_path: Path, fake: FakeGitHub) -> None:
    repos = make_repos(tmp_path, UNHEALABLE)
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env)
    assert run.outputs["status"] == "not_healed", run.out
    assert not fake.calls_of("POST", r"/pulls$")
    # No pull request: the escalation is one issue for this failure, not a comment on a commit page.
    assert fake.writes() == [("POST", f"/repos/{REPO}/issues")]
    (issue,) = fake.state.issues.values()
    assert issue["title"].startswith("selfix could not heal ") and issue["title"].endswith(" on feature/avg")
    assert "/selfix" not in issue["body"].replace("<!-- selfix:", "") and "close it once" in issue["body"]
