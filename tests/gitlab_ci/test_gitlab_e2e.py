"""``selfix gitlab`` end to end against a fake GitLab API and a bare repository standing in for GitLab's: the fix
branch really pushed, exactly one merge request or one note, and reruns that add nothing."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from selfix_action.ci.gitops import fingerprint, token_header
from selfix_action.heal import HealContext
from selfix_action.repair.loop import HealResult
from selfix_action.repair.report import Confidence, ConfidenceReason
from tests.helpers.action import (
    F2P,
    FIXED_CALC,
    UNHEALABLE,
    Repos,
    git,
    make_repos,
    remote_branches,
    synthetic,
)
from tests.helpers.fake_gitlab import FakeGitLab
from tests.helpers.gitlab_ci import CI_JOB_TOKEN, GITLAB_TOKEN, UNHEALABLE_JUNIT, gitlab_env, invoke

LOW = Confidence(level="low", reasons=(ConfidenceReason(code="pattern:guard_deleted", level="low", text="a guard"),))
MEDIUM = Confidence(
    level="medium",
    reasons=(
        ConfidenceReason(code="unconfirmed", level="medium", text="no reproduction test confirmed the hypothesis"),
    ),
)


def _fix_branch(repos: Repos) -> str:
    branches = [b for b in remote_branches(repos) if b.startswith("selfix/")]
    assert len(branches) == 1, branches
    return branches[0]


@pytest.mark.slow
def test_a_failed_pipeline_gets_one_verified_mr_and_a_rerun_adds_nothing(
    tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos
) -> None:
    """A real heal with the template's defaults: one push of selfix/<fingerprint>, one merge request into the
    failing branch with the evidence; the same pipeline run again posts nothing and pushes nothing. The patch
    (9 -> 10) is checked by the failing test alone, so it is `medium`: a draft led by that evidence."""
    env = gitlab_env(tmp_path, gitlab_api, repos)
    run = invoke(env)
    assert run.code == 0, run.out
    assert run.outputs["SELFIX_STATUS"] == "healed", run.out
    branch = _fix_branch(repos)
    assert git(repos.origin, "show", f"{branch}:calc.py") + "\n" == FIXED_CALC
    [mr] = gitlab_api.open_mrs()
    assert (mr["source_branch"], mr["target_branch"]) == (branch, "feature/avg")
    assert mr["draft"] and run.outputs["SELFIX_MR_URL"] == mr["web_url"]
    assert run.outputs["SELFIX_PUBLISH_REASON"] == "medium confidence: draft MR (pr_confidence=high)"
    body = mr["description"]
    assert body.startswith("## selfix: a patch that passes, with medium confidence\n\n**Evidence against"), body
    assert "- no passing test runs the edited lines" in body.split("Patch confidence:")[0]
    assert F2P in body and "Patch confidence: **medium**" in body, body
    assert "pipelines/777" in body  # the run link is the pipeline's page
    assert gitlab_api.posts() == ["/api/v4/projects/42/merge_requests"]
    tip = remote_branches(repos)[branch]

    again = invoke(gitlab_env(tmp_path, gitlab_api, repos))
    assert again.code == 0 and again.outputs["SELFIX_STATUS"] == "healed", again.out
    assert len(gitlab_api.posts()) == 1 and len(gitlab_api.open_mrs()) == 1
    assert remote_branches(repos)[branch] == tip
    assert "already holds this fix" in again.out


@pytest.mark.slow
def test_a_real_heal_that_fails_leaves_one_note_and_a_rerun_adds_nothing(
    tmp_path: Path, gitlab_api: FakeGitLab
) -> None:
    repos = make_repos(tmp_path / "unhealable", UNHEALABLE)
    for _ in range(2):
        run = invoke(gitlab_env(tmp_path, gitlab_api, repos, junit=UNHEALABLE_JUNIT))
        assert run.code == 0 and run.outputs["SELFIX_STATUS"] == "not_healed", run.out
    [note] = gitlab_api.commit_notes(repos.feature_sha)
    assert "could not heal" in note["body"] and "test_fib" in note["body"]
    assert len(gitlab_api.posts()) == 1 and gitlab_api.open_mrs() == []
    assert not [b for b in remote_branches(repos) if b.startswith("selfix/")]


def test_one_mr_and_a_rerun_adds_nothing_fast(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    """The slow test's publishing with the synthetic heal (the fast tier)."""
    for _ in range(2):
        run = invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=synthetic(True))
        assert run.outputs["SELFIX_STATUS"] == "healed", run.out
    assert len(gitlab_api.open_mrs()) == 1 and gitlab_api.posts() == ["/api/v4/projects/42/merge_requests"]
    assert git(repos.origin, "show", f"{_fix_branch(repos)}:calc.py") + "\n" == FIXED_CALC


def test_the_token_is_never_on_disk(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=synthetic(True))
    assert _fix_branch(repos)
    for config in (repos.workspace / ".git" / "config", repos.origin / "config"):
        text = config.read_text()
        assert GITLAB_TOKEN not in text and "extraheader" not in text
    assert GITLAB_TOKEN not in (repos.workspace / ".selfix" / "selfix.env").read_text()


def test_git_authenticates_with_a_header_for_the_server() -> None:
    key, value = token_header("https://gitlab.example.com/", GITLAB_TOKEN, user="oauth2")
    assert key == "http.https://gitlab.example.com/.extraheader"
    assert base64.b64decode(value.split()[-1]).decode() == f"oauth2:{GITLAB_TOKEN}"


def test_not_healed_is_one_commit_note_edited_by_reruns(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    run = invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=synthetic(False))
    assert run.code == 0 and run.outputs["SELFIX_STATUS"] == "not_healed", run.out
    [note] = gitlab_api.commit_notes(repos.feature_sha)
    assert "<!-- selfix:escalation " in note["body"] and "could not heal" in note["body"]
    assert "/selfix" not in note["body"] and "issue" not in note["body"]  # GitLab: no comment commands
    assert not [b for b in remote_branches(repos) if b.startswith("selfix/")]

    invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=synthetic(False))
    assert len(gitlab_api.commit_notes(repos.feature_sha)) == 1
    assert len(gitlab_api.posts()) == 1 and len(gitlab_api.calls_of("PUT", "/notes/")) == 1


def test_a_merge_request_pipeline_gets_its_note_on_the_mr(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    iid = gitlab_api.add_merge_request("feature/avg", "main")
    for _ in range(2):
        run = invoke(gitlab_env(tmp_path, gitlab_api, repos, mr_iid=iid), healer=synthetic(False))
        assert run.outputs["SELFIX_STATUS"] == "not_healed", run.out
    assert len(gitlab_api.state.mr_notes[iid]) == 1
    assert gitlab_api.commit_notes(repos.feature_sha) == []


def test_a_fix_for_a_merge_request_is_its_own_mr_and_the_mr_hears_of_it(
    tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos
) -> None:
    iid = gitlab_api.add_merge_request("feature/avg", "main")
    for _ in range(2):
        run = invoke(gitlab_env(tmp_path, gitlab_api, repos, mr_iid=iid), healer=synthetic(True))
        assert run.outputs["SELFIX_STATUS"] == "healed", run.out
    fixes = [m for m in gitlab_api.open_mrs() if m["source_branch"].startswith("selfix/")]
    assert len(fixes) == 1 and fixes[0]["target_branch"] == "feature/avg"
    [note] = gitlab_api.state.mr_notes[iid]
    assert f"!{fixes[0]['iid']}" in note["body"]
    assert len(gitlab_api.posts()) == 2  # the fix MR and the note, once each
    assert remote_branches(repos)["feature/avg"] == repos.feature_sha  # never the failing branch


def _at(confidence: Confidence) -> Callable[[HealContext], HealResult]:
    """The synthetic heal, its verified patch at ``confidence``."""
    base = synthetic(True)

    def heal(context: HealContext) -> HealResult:
        result = base(context)
        return HealResult(result.report.model_copy(update={"confidence": confidence}), result.files, result.originals)

    return heal


def test_medium_confidence_opens_a_draft_mr_led_by_the_evidence_against(
    tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos
) -> None:
    """Through python-gitlab against the fake server: a draft merge request whose description starts with the
    evidence against the patch."""
    run = invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=_at(MEDIUM))
    assert run.outputs["SELFIX_CONFIDENCE"] == "medium", run.out
    [mr] = gitlab_api.open_mrs()
    assert mr["draft"] and mr["title"].startswith("Draft: selfix (medium confidence)")
    assert mr["description"].splitlines()[:5] == [
        "## selfix: a patch that passes, with medium confidence",
        "",
        "**Evidence against this patch** (read this before the rest):",
        "",
        "- no reproduction test confirmed the hypothesis (caps it at medium)",
    ]
    assert run.outputs["SELFIX_PUBLISH_ACTION"] == "draft_pr"
    assert run.outputs["SELFIX_PUBLISH_REASON"] == "medium confidence: draft MR (pr_confidence=high)"
    assert "selfix: published: medium confidence: draft MR (pr_confidence=high)" in run.out


def test_low_confidence_is_one_note_with_the_patch_and_nothing_pushed(
    tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos
) -> None:
    heads = remote_branches(repos)
    for _ in range(2):
        run = invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=_at(LOW))
        assert run.outputs["SELFIX_STATUS"] == "healed" and run.outputs["SELFIX_CONFIDENCE"] == "low", run.out
        assert run.outputs["SELFIX_PUBLISH_ACTION"] == "escalate" and run.outputs["SELFIX_MR_URL"] == ""
    assert remote_branches(repos) == heads and gitlab_api.open_mrs() == []  # nothing pushed, no merge request
    [note] = gitlab_api.commit_notes(repos.feature_sha)  # one note per failure, edited by the rerun
    body = note["body"]
    assert "<!-- selfix:escalation " in body and "held back at low confidence" in body
    assert body.index("a guard (lowers it to low)") < body.index("<details><summary>The verified patch (diff)")
    assert "+    return 10" in body and "/selfix" not in body  # GitLab: no comment commands
    assert len(gitlab_api.posts()) == 1 and len(gitlab_api.calls_of("PUT", "/notes/")) == 1


def test_pr_confidence_medium_opens_a_low_patch_as_a_draft(
    tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos
) -> None:
    run = invoke(gitlab_env(tmp_path, gitlab_api, repos, SELFIX_PR_CONFIDENCE="medium"), healer=_at(LOW))
    [mr] = gitlab_api.open_mrs()
    assert mr["draft"] and mr["title"].startswith("Draft: selfix (low confidence)"), run.out
    assert run.outputs["SELFIX_PUBLISH_REASON"] == "low confidence: draft MR (pr_confidence=medium)"


def test_the_front_end_heals_through_heal(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    calls: list[HealContext] = []
    invoke(gitlab_env(tmp_path, gitlab_api, repos, SELFIX_MAX_ATTEMPTS="3"), healer=synthetic(True, calls))
    [context] = calls
    assert context.request.loop.max_hypotheses == 3 and F2P in [t.label for t in context.junit_failing]


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"branch": "selfix/0123456789ab"}, "selfix fix branch"),
        ({"mr_iid": 5, "source_project_id": 99}, "fork"),
        ({"CI_COMMIT_TAG": "v1.0"}, "tag pipeline"),
        ({"CI_COMMIT_AUTHOR": "selfix <selfix@users.noreply.github.com>"}, "selfix's own"),
    ],
)
def test_skipped_pipelines_touch_nothing(
    tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos, extra: dict[str, object], why: str
) -> None:
    calls: list[HealContext] = []
    env = gitlab_env(tmp_path, gitlab_api, repos, **extra)  # type: ignore[arg-type]
    run = invoke(env, healer=synthetic(True, calls))
    assert run.code == 0 and run.outputs["SELFIX_STATUS"] == "skipped" and why in run.out, run.out
    assert calls == [] and gitlab_api.calls == []


def test_without_a_token_nothing_is_published(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    run = invoke(gitlab_env(tmp_path, gitlab_api, repos, token=""), healer=synthetic(True))
    assert run.code == 0 and run.outputs["SELFIX_STATUS"] == "healed", run.out
    assert gitlab_api.calls == [] and "SELFIX_GITLAB_TOKEN" in run.out
    assert not [b for b in remote_branches(repos) if b.startswith("selfix/")]


def test_a_refused_api_call_is_exit_1(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    run = invoke(gitlab_env(tmp_path, gitlab_api, repos, token="glpat-wrong"), healer=synthetic(True))
    assert run.code == 1 and run.outputs["SELFIX_STATUS"] == "error" and "401" in run.out, run.out


def test_invalid_settings_and_outside_gitlab_are_exit_2(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    env = gitlab_env(tmp_path, gitlab_api, repos, SELFIX_MAX_ATTEMPTS="many")
    run = invoke(env)
    assert run.code == 2 and "max_attempts" in run.out, run.out
    assert invoke({**env, "SELFIX_MAX_ATTEMPTS": "3", "GITLAB_CI": ""}).code == 2
    assert invoke({**env, "SELFIX_MAX_ATTEMPTS": "3", "SELFIX_GITLAB_PUSH_URL": "https://u:glpat-x@h/p.git"}).code == 2
    assert gitlab_api.calls == []


def test_the_job_token_does_not_reach_the_api(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=synthetic(True))
    assert gitlab_api.calls and all(CI_JOB_TOKEN not in str(c.headers) for c in gitlab_api.calls)


def test_a_later_pipeline_edits_the_fix_mr(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=synthetic(True))
    later = gitlab_env(tmp_path, gitlab_api, repos, CI_PIPELINE_URL=f"{gitlab_api.url}/group/sub/project/-/pipelines/8")
    run = invoke(later, healer=synthetic(True))
    [mr] = gitlab_api.open_mrs()
    assert "pipelines/8" in mr["description"] and "updated the existing fix merge request" in run.out, run.out
    assert len(gitlab_api.posts()) == 1 and len(gitlab_api.calls_of("PUT", r"/merge_requests/\d+$")) == 1


def test_report_mode_is_one_note_and_no_push(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    for _ in range(2):
        run = invoke(gitlab_env(tmp_path, gitlab_api, repos, SELFIX_MODE="report"), healer=synthetic(True))
        assert run.outputs["SELFIX_STATUS"] == "healed", run.out
    [note] = gitlab_api.commit_notes(repos.feature_sha)
    assert "## selfix: verified fix" in note["body"] and "return 10" in note["body"]
    assert gitlab_api.open_mrs() == [] and len(gitlab_api.posts()) == 1
    assert not [b for b in remote_branches(repos) if b.startswith("selfix/")]


def test_a_fix_branch_selfix_did_not_create_is_left_alone(tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos) -> None:
    """Someone else's selfix/<fingerprint> on the remote: not overwritten, no MR, the patch in the one note."""
    branch = "selfix/" + fingerprint("feature/avg", [F2P])
    git(repos.workspace, "push", "-q", "origin", f"{repos.main_sha}:refs/heads/{branch}")
    run = invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=synthetic(True))
    assert run.code == 0 and "not pushed" in run.out, run.out
    assert remote_branches(repos)[branch] == repos.main_sha
    [note] = gitlab_api.commit_notes(repos.feature_sha)
    assert "Not pushed:" in note["body"] and "was not created by selfix" in note["body"]
    assert gitlab_api.open_mrs() == []


def test_the_runners_job_token_in_origins_url_is_out_of_git_config_while_the_heal_runs(
    tmp_path: Path, gitlab_api: FakeGitLab, repos: Repos
) -> None:
    """GitLab's runner clones with ``https://gitlab-ci-token:<job token>@host/...`` as origin's URL; project code
    runs during the heal and could read .git/config. It is taken out for the heal and put back afterwards."""
    config = repos.workspace / ".git" / "config"
    runner_url = f"https://gitlab-ci-token:{CI_JOB_TOKEN}@gitlab.example.com/group/project.git"
    git(repos.workspace, "remote", "set-url", "origin", runner_url)
    base = synthetic(True)
    seen: list[str] = []

    def heal_reading_the_config(context: HealContext) -> HealResult:
        seen.append(config.read_text())  # what a test or setup_command in the workspace would read
        return base(context)

    run = invoke(gitlab_env(tmp_path, gitlab_api, repos), healer=heal_reading_the_config)

    assert run.code == 0, run.out
    assert seen and CI_JOB_TOKEN not in seen[0]
    assert "url = https://gitlab.example.com/group/project.git" in seen[0]
    assert "holding the checkout's credential outside .git/config (1 entry)" in run.out
    assert git(repos.workspace, "remote", "get-url", "origin").strip() == runner_url  # back for later jobs
    assert _fix_branch(repos)  # the push went to the push URL, with the token as a header
