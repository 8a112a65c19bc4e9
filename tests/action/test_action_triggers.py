"""``selfix action`` end to end for each trigger and mode: real PyGithub against the fake API, local bare origin.

Every test asserts exactly which API calls were made (``fake.calls``), and what reached ``origin``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.ci.gitops import TRAILER, fingerprint
from selfix_action.heal import HealContext
from selfix_action.publish.render import HELP_TEXT
from tests.helpers.action import (
    F2P,
    FIXED_CALC,
    JUNIT,
    REPO,
    Repos,
    action_env,
    comment_payload,
    git,
    invoke,
    payload,
    remote_branches,
    synthetic,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub, load_exchanges
from tests.helpers.fake_providers import FakeProvider, serve

R = f"/repos/{REPO}"


def api(fake: FakeGitHub) -> list[tuple[str, str]]:
    """Every call, in order, as (method, path relative to the repository)."""
    return [(c.method, c.path.removeprefix(R)) for c in fake.calls]


def fix_branch_for(branch: str) -> str:
    return f"selfix/{fingerprint(branch, [F2P])}"


# -- workflow_dispatch ------------------------------------------------------------------------------------------
def dispatch_payload(ref: str, description: str) -> dict[str, object]:
    data = payload("workflow_dispatch.payload.json")
    data["repository"].update(full_name=REPO, default_branch="main")
    data["inputs"] = {"ref": ref, "description": description}
    return data


def test_workflow_dispatch_heals_the_ref_with_the_description(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    calls: list[HealContext] = []
    env = action_env(tmp_path, fake, repos, "workflow_dispatch", dispatch_payload("feature/avg", "limit is 10"))
    run = invoke(env, synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert calls[0].hint == "limit is 10" and calls[0].junit == ()
    assert git(repos.workspace, "rev-parse", "HEAD") == repos.feature_sha  # healed the tip of the ref
    branch = fix_branch_for("feature/avg")
    assert api(fake) == [
        ("GET", f"/commits/{repos.feature_sha}/pulls"),  # is there a PR to report on? (none)
        ("GET", "/pulls"),  # an open selfix PR for this fingerprint? (none)
        ("GET", "/pulls"),  # how many selfix PRs are open (max_open_prs)? (none)
        ("POST", "/pulls"),
        ("POST", "/issues/101/labels"),
    ]
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert (pr["base"], pr["head"]) == ("feature/avg", branch)
    assert fake.calls_of("POST", "/labels")[0].body == ["selfix"]
    heads = remote_branches(repos)
    assert heads["feature/avg"] == repos.feature_sha and heads["main"] == repos.main_sha
    assert git(repos.origin, "show", f"{heads[branch]}:calc.py") + "\n" == FIXED_CALC


@pytest.fixture
def llm() -> Iterator[dict[str, str]]:
    """The inputs naming an LLM engine (QA writes a reproduction test), whose server answers the preflight; the
    heal itself is the synthetic healer's, so no role is asked."""
    with serve(FakeProvider(by_tool={})) as url:
        yield {"engine": "anthropic", "anthropic_api_key": "k", "anthropic_base_url": url}


SENTRY_ALERT = {
    "action": "triggered",
    "data": {
        "event": {
            "event_id": "e1",
            "web_url": "https://sentry.example/organizations/o/issues/7/events/e1/",
            "exception": {
                "values": [
                    {
                        "type": "ZeroDivisionError",
                        "value": "division by zero",
                        "module": "builtins",
                        "stacktrace": {
                            "frames": [
                                {"abs_path": "/srv/app/calc.py", "lineno": 2, "function": "average", "in_app": True}
                            ]
                        },
                    }
                ]
            },
        }
    },
}


def test_workflow_dispatch_with_an_error_heals_that_error_and_not_a_junit_report(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, llm: dict[str, str]
) -> None:
    """``selfix serve`` dispatches a Sentry alert as the ``error`` input: the heal gets the error, no JUnit files,
    and the log says which signal it was."""
    calls: list[HealContext] = []
    data = dispatch_payload("feature/avg", "")
    data["inputs"] = {"ref": "feature/avg", "error": json.dumps(SENTRY_ALERT), "signal": "error:abc123"}
    env = action_env(tmp_path, fake, repos, "workflow_dispatch", data, **llm)
    run = invoke(env, synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    reported = calls[0].request.reported_error
    assert reported is not None and reported.exc_type == "ZeroDivisionError"
    assert reported.origin == "https://sentry.example/organizations/o/issues/7/events/e1/"
    assert calls[0].junit == () and calls[0].reproduction is not None
    assert "selfix serve signal error:abc123" in run.out


def test_the_from_error_input_names_a_file_in_the_workspace(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, llm: dict[str, str]
) -> None:
    calls: list[HealContext] = []
    crash = repos.workspace / "crash.log"
    crash.write_text('Traceback (most recent call last):\n  File "/app/calc.py", line 2, in f\nKeyError: 1\n')
    data = dispatch_payload("feature/avg", "")
    env = action_env(tmp_path, fake, repos, "workflow_dispatch", data, from_error="crash.log", **llm)
    run = invoke(env, synthetic(True, calls))
    assert run.code == 0, run.out
    reported = calls[0].request.reported_error
    assert reported is not None and (reported.exc_type, reported.origin) == ("KeyError", "the error report crash.log")
    outside = action_env(tmp_path, fake, repos, "workflow_dispatch", data, from_error="../crash.log", **llm)
    run = invoke(outside, synthetic(True))
    assert run.code == 1 and "from_error must be a file inside the workspace" in run.out


def test_workflow_dispatch_ref_that_is_not_a_branch_is_an_error(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_dispatch", dispatch_payload("no-such-branch", ""))
    run = invoke(env, synthetic(True))
    assert (run.code, run.outputs["status"]) == (1, "error")
    assert "not a branch on origin" in run.out
    assert fake.calls == []


# -- a plain step after a failed test step ------------------------------------------------------------------
def step_env(tmp_path: Path, fake: FakeGitHub, repos: Repos, **inputs: str) -> dict[str, str]:
    git(repos.workspace, "checkout", "-q", "feature/avg")  # actions/checkout of the pushed branch
    data = {"ref": "refs/heads/feature/avg", "repository": {"full_name": REPO, "default_branch": "main"}}
    env = action_env(tmp_path, fake, repos, "push", data, **inputs)
    env.update(GITHUB_REF_NAME="feature/avg", GITHUB_SHA=repos.feature_sha)
    return env


def test_step_after_failed_tests_reads_junit_from_globs(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    reports = repos.workspace / "reports"
    reports.mkdir()
    (reports / "junit-unit.xml").write_text(JUNIT)
    (reports / "other.xml").write_text("<not-junit")  # not matched by the glob: never read
    (repos.workspace / "junit-top.xml").write_text(JUNIT)  # not matched either
    calls: list[HealContext] = []
    env = step_env(tmp_path, fake, repos, junit_paths="reports/junit-*.xml\n, missing/*.xml")
    run = invoke(env, synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert [p.relative_to(repos.workspace.resolve()).as_posix() for p in calls[0].junit] == ["reports/junit-unit.xml"]
    assert api(fake) == [
        ("GET", f"/commits/{repos.feature_sha}/pulls"),
        ("GET", "/pulls"),
        ("GET", "/pulls"),
        ("POST", "/pulls"),
        ("POST", "/issues/101/labels"),
    ]
    assert fake.calls_of("POST", r"/pulls$")[0].body["base"] == "feature/avg"


def test_step_with_passing_junit_has_nothing_to_heal(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    passing = JUNIT.replace('<failure message="assert 9 == 10">assert 9 == 10</failure>', "")
    assert "<failure" not in passing
    (repos.workspace / "junit.xml").write_text(passing)
    calls: list[HealContext] = []
    run = invoke(step_env(tmp_path, fake, repos), synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "nothing_to_heal"), run.out
    assert calls == []
    assert api(fake) == [("GET", f"/commits/{repos.feature_sha}/pulls")]
    assert remote_branches(repos).keys() == {"main", "feature/avg"}


def test_step_junit_glob_escaping_the_workspace_is_refused(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    run = invoke(step_env(tmp_path, fake, repos, junit_paths="../*.xml"), synthetic(True))
    assert (run.code, run.outputs["status"]) == (1, "error")
    assert "relative to the workspace" in run.out


# -- mode: commit ---------------------------------------------------------------------------------------------
def test_commit_mode_fast_forwards_the_failing_pr_branch(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data, mode="commit"), synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert run.outputs["pr_url"] == f"https://github.com/{REPO}/pull/{number}"
    assert api(fake) == [
        ("GET", f"/pulls/{number}"),
        ("GET", "/actions/runs/4242"),
        ("GET", "/actions/runs/4242/artifacts"),
        ("GET", f"/issues/{number}/comments"),
        ("POST", f"/issues/{number}/comments"),
    ]
    heads = remote_branches(repos)
    assert heads["main"] == repos.main_sha  # the base is never touched
    assert heads.keys() == {"main", "feature/avg"}  # no selfix/ branch, no PR
    assert git(repos.origin, "rev-parse", f"{heads['feature/avg']}^") == repos.feature_sha  # a fast-forward
    assert git(repos.origin, "show", f"{heads['feature/avg']}:calc.py") + "\n" == FIXED_CALC
    assert f"{TRAILER}: " in git(repos.origin, "log", "-1", "--format=%B", heads["feature/avg"])
    assert "pushed a fix to `feature/avg`" in fake.calls_of("POST", "/comments$")[0].body["body"]


@pytest.mark.parametrize(
    ("default_branch", "base_ref"),
    [("feature/avg", "main"), ("main", "feature/avg")],
    ids=["head-is-default-branch", "head-is-base-branch"],
)
def test_commit_mode_never_pushes_to_base_or_default_branch(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, default_branch: str, base_ref: str
) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref=base_ref)
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    data["repository"]["default_branch"] = default_branch
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data, mode="commit"), synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert remote_branches(repos) == {"main": repos.main_sha, "feature/avg": repos.feature_sha}
    assert fake.writes() == [("POST", f"{R}/issues/{number}/comments")]
    body = fake.calls_of("POST", "/comments$")[0].body["body"]
    assert "Not pushed: not pushing to feature/avg: it is the base or default branch" in body
    assert "```diff" in body  # the verified patch is still shown


def test_commit_mode_is_refused_for_a_fork(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "write"
    number = fake.add_pull(
        head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main", head_repo="evil/octo-repo"
    )
    data = comment_payload("/selfix fix", number=number)
    run = invoke(action_env(tmp_path, fake, repos, "issue_comment", data, mode="commit"), synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert remote_branches(repos) == {"main": repos.main_sha, "feature/avg": repos.feature_sha}
    (comment,) = fake.state.issue_comments.values()
    assert api(fake) == [
        ("GET", "/collaborators/Codertocat/permission"),
        ("POST", "/issues/comments/555/reactions"),
        ("GET", f"/pulls/{number}"),
        ("GET", f"/issues/{number}/comments"),
        ("POST", f"/issues/{number}/comments"),  # the tracking comment ...
        ("PATCH", f"/issues/comments/{comment['id']}"),  # ... edited into the report: the patch, not pushed
    ]
    assert "```diff" in comment["body"] and "fork" in run.summary


# -- mode: suggest --------------------------------------------------------------------------------------------
def test_suggest_mode_posts_review_suggestions_on_the_pr_lines(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "maintain"
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = comment_payload("/selfix fix", number=number)
    run = invoke(action_env(tmp_path, fake, repos, "issue_comment", data, mode="suggest"), synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    (comment,) = fake.state.issue_comments.values()
    assert api(fake) == [
        ("GET", "/collaborators/Codertocat/permission"),
        ("POST", "/issues/comments/555/reactions"),
        ("GET", f"/pulls/{number}"),
        ("GET", f"/issues/{number}/comments"),
        ("POST", f"/issues/{number}/comments"),
        ("GET", f"/pulls/{number}/reviews"),  # selfix's review for this failure? (none)
        ("POST", f"/pulls/{number}/reviews"),
        ("PATCH", f"/issues/comments/{comment['id']}"),
    ]
    review = fake.calls_of("POST", "/reviews$")[0].body
    assert review["commit_id"] == repos.feature_sha and review["event"] == "COMMENT"
    assert review["comments"] == [
        {"path": "calc.py", "line": 2, "side": "RIGHT", "body": "```suggestion\n    return 10\n```"}
    ]
    # The recorded shape of a PR review comment request (PyGithub ReplayData): same field names for the
    # location and text; a review's comments carry no commit_id (the review has it) and no in_reply_to.
    recorded = load_exchanges("PullRequest.testCreateReviewCommentInReplyTo.txt")[-1]
    assert recorded["method"] == "POST" and recorded["path"].endswith("/comments")
    assert set(review["comments"][0]) - {"side"} == set(recorded["request_body"]) - {"commit_id", "in_reply_to"}
    assert isinstance(recorded["request_body"]["commit_id"], str)
    assert remote_branches(repos).keys() == {"main", "feature/avg"}  # nothing pushed
    assert "review suggestions" in comment["body"]


# -- /selfix explain, help, retry --------------------------------------------------------------------------------
def test_explain_diagnoses_and_comments_without_a_patch(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "admin"
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    calls: list[HealContext] = []
    data = comment_payload("/selfix explain", number=number)
    run = invoke(action_env(tmp_path, fake, repos, "issue_comment", data), synthetic(True, calls))
    assert run.code == 0, run.out
    assert run.outputs["status"] == "explained" and run.outputs["pr_url"] == ""  # a patch held, none was published
    assert len(calls) == 1 and calls[0].hint == ""
    (comment,) = fake.state.issue_comments.values()
    assert api(fake) == [
        ("GET", "/collaborators/Codertocat/permission"),
        ("POST", "/issues/comments/555/reactions"),
        ("GET", f"/pulls/{number}"),
        ("GET", f"/issues/{number}/comments"),
        ("POST", f"/issues/{number}/comments"),
        ("PATCH", f"/issues/comments/{comment['id']}"),
    ]
    assert "selfix: diagnosis" in comment["body"] and "```diff" not in comment["body"]
    assert remote_branches(repos).keys() == {"main", "feature/avg"}
    assert fake.state.pulls.keys() == {number} and fake.state.reviews == []


def test_help_answers_without_healing(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "write"
    calls: list[HealContext] = []
    data = comment_payload("/selfix help", number=7)
    run = invoke(action_env(tmp_path, fake, repos, "issue_comment", data), synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "skipped"), run.out
    assert calls == []
    assert api(fake) == [
        ("GET", "/collaborators/Codertocat/permission"),
        ("POST", "/issues/comments/555/reactions"),
        ("GET", "/issues/7/comments"),
        ("POST", "/issues/7/comments"),
    ]
    assert fake.state.reactions == [(555, "eyes")]
    assert next(iter(fake.state.issue_comments.values()))["body"].startswith(HELP_TEXT)


def test_retry_runs_again_and_edits_the_same_comment(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    fake.state.permissions["Codertocat"] = "write"
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    first_env = action_env(tmp_path, fake, repos, "issue_comment", comment_payload("/selfix fix", number=number))
    assert invoke(first_env, synthetic(False)).outputs["status"] == "not_healed"
    (comment,) = fake.state.issue_comments.values()
    assert "could not heal" in comment["body"]
    fake.calls.clear()
    calls: list[HealContext] = []
    data = comment_payload("/selfix retry", number=number, comment_id=556)
    run = invoke(action_env(tmp_path, fake, repos, "issue_comment", data), synthetic(True, calls))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert len(calls) == 1
    cid = comment["id"]
    assert api(fake) == [
        ("GET", "/collaborators/Codertocat/permission"),
        ("POST", "/issues/comments/556/reactions"),
        ("GET", f"/pulls/{number}"),
        ("GET", f"/issues/{number}/comments"),  # finds the tracking comment of the first run ...
        ("GET", "/user"),  # ... checks it was written by this token (403 for GITHUB_TOKEN: github-actions[bot])
        ("PATCH", f"/issues/comments/{cid}"),  # ... and edits it: no second comment
        ("GET", "/pulls"),
        ("GET", "/pulls"),
        ("POST", "/pulls"),
        ("POST", f"/issues/{number + 1}/labels"),
        ("PATCH", f"/issues/comments/{cid}"),
    ]
    assert len(fake.state.issue_comments) == 1
    assert f"fix proposed in #{number + 1}" in fake.state.issue_comments[cid]["body"]


def pull_request_step_env(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, number: int, *, merge_commit: bool
) -> dict[str, str]:
    git(repos.workspace, "checkout", "-q", "feature/avg")
    if merge_commit:  # actions/checkout of a pull_request event: GitHub's merge commit, not the PR head
        git(repos.workspace, "commit", "-q", "--allow-empty", "-m", "Merge feature/avg into main")
    pr = {
        "number": number,
        "head": {"ref": "feature/avg", "sha": repos.feature_sha, "repo": {"full_name": REPO}},
        "base": {"ref": "main"},
    }
    data = {"pull_request": pr, "repository": {"full_name": REPO, "default_branch": "main"}}
    env = action_env(tmp_path, fake, repos, "pull_request", data)
    env.update(GITHUB_HEAD_REF="feature/avg", GITHUB_REF_NAME=f"{number}/merge")
    (repos.workspace / "junit.xml").write_text(JUNIT)
    return env


def test_step_in_a_pull_request_opens_a_fix_pr_into_its_branch(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    env = pull_request_step_env(tmp_path, fake, repos, number, merge_commit=False)
    run = invoke(env, synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert api(fake) == [
        ("GET", f"/pulls/{number}"),
        ("GET", "/pulls"),
        ("GET", "/pulls"),
        ("POST", "/pulls"),
        ("POST", f"/issues/{number + 1}/labels"),
        ("GET", f"/issues/{number}/comments"),
        ("POST", f"/issues/{number}/comments"),  # the failing PR hears about the fix PR
    ]
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert (pr["base"], pr["head"]) == ("feature/avg", fix_branch_for("feature/avg"))


def test_step_on_a_merge_commit_only_reports(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    env = pull_request_step_env(tmp_path, fake, repos, number, merge_commit=True)
    run = invoke(env, synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert "merge commit" in run.out
    assert api(fake) == [
        ("GET", f"/pulls/{number}"),
        ("GET", f"/issues/{number}/comments"),
        ("POST", f"/issues/{number}/comments"),
    ]
    assert "```diff" in fake.calls_of("POST", "/comments$")[0].body["body"]
    assert remote_branches(repos) == {"main": repos.main_sha, "feature/avg": repos.feature_sha}


def test_commit_mode_does_not_push_when_the_branch_moved(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    git(repos.workspace, "checkout", "-q", "feature/avg")
    git(repos.workspace, "commit", "-q", "--allow-empty", "-m", "someone pushed meanwhile")
    git(repos.workspace, "push", "-q", "origin", "HEAD:refs/heads/feature/avg")
    moved = git(repos.workspace, "rev-parse", "HEAD")
    git(repos.workspace, "checkout", "-q", "main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data, mode="commit"), synthetic(True))
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert remote_branches(repos) == {"main": repos.main_sha, "feature/avg": moved}  # no force, no rewrite
    assert fake.writes() == [("POST", f"{R}/issues/{number}/comments")]
    assert "moved since the failing run" in fake.calls_of("POST", "/comments$")[0].body["body"]


# -- outside Actions --------------------------------------------------------------------------------------------
def test_outside_actions_says_so_and_exits_2_touching_nothing(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = action_env(tmp_path, fake, repos, "workflow_dispatch", dispatch_payload("feature/avg", ""))
    del env["GITHUB_ACTIONS"]
    head = git(repos.workspace, "rev-parse", "HEAD")
    run = invoke(env, synthetic(True))
    assert run.code == 2
    assert "runs inside a GitHub Actions job" in run.out and "selfix fix" in run.out
    assert "rev-parse" not in run.out
    assert fake.calls == [] and run.outputs == {} and run.summary == ""
    assert git(repos.workspace, "rev-parse", "HEAD") == head
