"""A rerun of the same failure is quiet in every mode: against the fake API, the second run of the same event makes
no new PR, commit, review or comment; it edits what the first run made, or leaves it alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from selfix_action.ci.gitops import fingerprint
from selfix_action.heal import HealContext
from selfix_action.publish.render import review_marker_prefix
from selfix_action.repair.loop import HealResult
from selfix_action.repair.patches import unified_diff
from tests.helpers.action import F2P, REPO, Repos, action_env, invoke, remote_branches, synthetic, workflow_run_payload
from tests.helpers.fake_github import FakeGitHub

R = f"/repos/{REPO}"
OTHER_FIX = "def limit():\n    return 5 + 5\n\n\ndef double(x):\n    return x * 2\n"


def writes_of_second_run(fake: FakeGitHub, env: dict[str, str], healer: Callable[[HealContext], HealResult]) -> list:
    fake.calls.clear()
    run = invoke(env, healer)
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    return [(method, path.removeprefix(R)) for method, path in fake.writes()]


def on_pull(tmp_path: Path, fake: FakeGitHub, repos: Repos, **inputs: str) -> tuple[dict[str, str], int]:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    return action_env(tmp_path, fake, repos, "workflow_run", data, **inputs), number


def other_fix(request: HealContext) -> HealResult:
    """The same failure healed with another patch (a model's second answer, say)."""
    result = synthetic(True)(request)
    assert result.report.patch is not None and result.files is not None
    diff = unified_diff(result.originals, {"calc.py": OTHER_FIX})
    patch = result.report.patch.model_copy(update={"diff": diff, "description": "line 2: `9` -> `5 + 5`"})
    report = result.report.model_copy(update={"patch": patch})
    return dataclasses.replace(result, report=report, files={"calc.py": OTHER_FIX})


def test_pr_mode_rerun_updates_the_pr_and_starts_no_second_ci_run(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    assert invoke(env, synthetic(True)).outputs["status"] == "healed"
    heads = remote_branches(repos)
    (dispatch,) = fake.state.dispatches
    # The branch already holds this fix and its CI run was started: the PR body is refreshed, nothing else.
    assert writes_of_second_run(fake, env, synthetic(True)) == [("PATCH", "/pulls/101")]
    assert fake.state.dispatches == [dispatch] and remote_branches(repos) == heads
    body = fake.state.pulls[101]["body"]
    assert f"/actions/runs/{dispatch['run_id']}) verifies this fix" in body  # the first run's CI link is kept


def test_pr_mode_rerun_with_another_fix_pushes_and_verifies_it(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    invoke(env, synthetic(True))
    branch = f"selfix/{fingerprint('feature/avg', [F2P])}"
    before = remote_branches(repos)[branch]
    writes = writes_of_second_run(fake, env, other_fix)
    assert writes == [("POST", "/actions/workflows/2823525/dispatches"), ("PATCH", "/pulls/101")]
    assert remote_branches(repos)[branch] != before and len(fake.state.dispatches) == 2


def test_commit_mode_rerun_pushes_nothing_and_keeps_saying_pushed(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    env, number = on_pull(tmp_path, fake, repos, mode="commit")
    assert invoke(env, synthetic(True)).outputs["pr_url"] == f"https://github.com/{REPO}/pull/{number}"
    heads = remote_branches(repos)
    assert heads["feature/avg"] != repos.feature_sha  # the first run pushed its commit
    (comment,) = fake.state.issue_comments.values()
    first_body = comment["body"]
    assert writes_of_second_run(fake, env, synthetic(True)) == [("PATCH", f"/issues/comments/{comment['id']}")]
    assert remote_branches(repos) == heads  # no second commit
    assert comment["body"] == first_body and "pushed a fix to `feature/avg`" in comment["body"]


def test_suggest_mode_rerun_leaves_the_one_review_alone(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env, number = on_pull(tmp_path, fake, repos, mode="suggest")
    assert invoke(env, synthetic(True)).outputs["pr_url"] == f"https://github.com/{REPO}/pull/{number}"
    (review,) = fake.state.reviews
    (comment,) = fake.state.issue_comments.values()
    assert writes_of_second_run(fake, env, synthetic(True)) == [("PATCH", f"/issues/comments/{comment['id']}")]
    assert fake.state.reviews == [review]
    assert review_marker_prefix(fingerprint("feature/avg", [F2P])) in review["body"]  # how it was found again
    assert "review suggestions" in comment["body"]


def test_suggest_mode_rerun_with_other_suggestions_updates_the_review(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    env, number = on_pull(tmp_path, fake, repos, mode="suggest")
    invoke(env, synthetic(True))
    (review,) = fake.state.reviews
    first_marker = next(line for line in review["body"].splitlines() if "selfix:review" in line)
    (comment,) = fake.state.issue_comments.values()
    assert writes_of_second_run(fake, env, other_fix) == [
        ("PUT", f"/pulls/{number}/reviews/{review['id']}"),
        ("PATCH", f"/issues/comments/{comment['id']}"),
    ]
    assert len(fake.state.reviews) == 1
    assert "**Outdated:**" in review["body"] and "the current patch is in selfix's comment" in review["body"]
    assert first_marker in review["body"]  # the marker still describes the suggestions the review holds
    assert "+    return 5 + 5" in comment["body"]  # the current patch, in the one tracking comment
    # and a third run with that same other fix changes nothing new: still one review
    writes_of_second_run(fake, env, other_fix)
    assert len(fake.state.reviews) == 1 and not fake.calls_of("POST", "/reviews$")


def test_report_mode_rerun_edits_the_one_comment(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env, number = on_pull(tmp_path, fake, repos, mode="report")
    assert invoke(env, synthetic(True)).outputs["status"] == "healed"
    (comment,) = fake.state.issue_comments.values()
    assert comment["_issue"] == number
    assert writes_of_second_run(fake, env, synthetic(True)) == [("PATCH", f"/issues/comments/{comment['id']}")]
    assert len(fake.state.issue_comments) == 1 and "```diff" in comment["body"]
    assert remote_branches(repos).keys() == {"main", "feature/avg"}


def test_report_mode_rerun_without_a_pull_edits_the_commit_comment(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    env = action_env(tmp_path, fake, repos, "workflow_run", data, mode="report")
    invoke(env, synthetic(True))
    (comment,) = fake.state.commit_comments.values()
    assert writes_of_second_run(fake, env, synthetic(True)) == [("PATCH", f"/comments/{comment['id']}")]
    assert len(fake.state.commit_comments) == 1
