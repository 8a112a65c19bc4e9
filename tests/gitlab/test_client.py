"""The GitLab client over python-gitlab against a fake REST v4 API: the calls, the fault matrix (401/403/404,
409 on a second merge request from a branch, 400, 5xx retried, 429 with Retry-After) and no duplicate on a lost
response."""

from __future__ import annotations

import pytest

from selfix_action.errors import SelfixError
from selfix_action.gitlab.client import GitLabClient
from selfix_action.gitlab.errors import GitLabError, GitLabRateLimited
from tests.helpers.fake_gitlab import FakeGitLab

SHA = "a" * 40
MARKER = "<!-- selfix:escalation 0123456789ab -->"


def _open(client: GitLabClient, *, draft: bool = False) -> int:
    mr = client.create_merge_request(
        source="selfix/0123456789ab",
        target="feature",
        title="selfix: fix t",
        description="body",
        draft=draft,
        labels=("selfix", "bot"),
    )
    return mr.iid


def test_a_merge_request_in_gitlab_s_shape(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    iid = _open(client, draft=True)
    mr = client.get_merge_request(iid)
    assert (mr.source_branch, mr.target_branch, mr.title) == ("selfix/0123456789ab", "feature", "Draft: selfix: fix t")
    assert mr.draft and mr.labels == ("selfix", "bot") and mr.web_url.endswith(f"/-/merge_requests/{iid}")
    call = gitlab_api.calls_of("POST", "/merge_requests$")[0]
    assert call.headers["private-token"] == "glpat-faketoken0123456789"
    assert call.body["remove_source_branch"] is True and call.body["labels"] == "selfix,bot"


def test_an_open_merge_request_from_the_branch_is_reused(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    first = _open(client)
    assert _open(client) == first
    assert len(gitlab_api.posts()) == 1


def test_409_after_a_lost_response_finds_the_merge_request(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    """The POST went through but its answer was lost (502): python-gitlab retries it, GitLab says 409 (another
    open merge request from this branch), and the client returns that one: one merge request."""
    gitlab_api.fail("POST", r"/merge_requests$", 502, after_apply=True)
    iid = _open(client)
    assert [m["iid"] for m in gitlab_api.open_mrs()] == [iid]
    assert len(gitlab_api.calls_of("POST", "/merge_requests$")) == 2  # python-gitlab's own retry


def test_400_is_an_error_with_its_message(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    gitlab_api.fail("POST", r"/merge_requests$", 400, body={"message": {"source_branch": ["is invalid"]}})
    with pytest.raises(GitLabError, match="400") as info:
        _open(client)
    assert info.value.status == 400 and isinstance(info.value, SelfixError)


@pytest.mark.parametrize("status", [401, 403, 404])
def test_refusals_are_translated_not_retried(client: GitLabClient, gitlab_api: FakeGitLab, status: int) -> None:
    gitlab_api.fail("GET", r"/merge_requests$", status, times=5)
    with pytest.raises(GitLabError) as info:
        client.find_open_merge_request("selfix/x")
    assert info.value.status == status
    assert len(gitlab_api.calls_of("GET", "/merge_requests$")) == 1


def test_a_wrong_token_is_a_401(gitlab_api: FakeGitLab) -> None:
    client = GitLabClient(gitlab_api.url, gitlab_api.state.project_id, "glpat-wrong", max_retries=2)
    with pytest.raises(GitLabError, match="401"):
        client.find_open_merge_request("selfix/x")


def test_an_unreachable_server_is_an_error(gitlab_api: FakeGitLab) -> None:
    url = gitlab_api.url
    gitlab_api.stop()
    client = GitLabClient(url, 42, "t", max_retries=0, timeout=5)
    with pytest.raises(GitLabError, match="cannot reach"):
        client.find_open_merge_request("selfix/x")


def test_5xx_is_retried_by_python_gitlab(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    gitlab_api.fail("GET", r"/merge_requests$", 503, times=2)
    assert client.find_open_merge_request("selfix/x") is None
    assert len(gitlab_api.calls_of("GET", "/merge_requests$")) == 3


def test_5xx_beyond_max_retries_is_an_error(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    gitlab_api.fail("GET", r"/merge_requests$", 500, times=10)
    with pytest.raises(GitLabError, match="500"):
        client.find_open_merge_request("selfix/x")
    assert len(gitlab_api.calls_of("GET", "/merge_requests$")) == 3  # the first try and max_retries=2


def test_429_waits_for_retry_after_then_succeeds(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    gitlab_api.rate_limit("GET", r"/merge_requests$", retry_after=0)
    assert client.find_open_merge_request("selfix/x") is None
    assert len(gitlab_api.calls_of("GET", "/merge_requests$")) == 2


def test_429_that_persists_is_rate_limited(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    gitlab_api.rate_limit("GET", r"/merge_requests$", times=10, retry_after=0)
    with pytest.raises(GitLabRateLimited):
        client.find_open_merge_request("selfix/x")


def test_a_merge_request_note_is_edited_not_duplicated(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    iid = gitlab_api.add_merge_request("feature", "main")
    client.upsert_mr_note(iid, MARKER, "first")
    client.upsert_mr_note(iid, MARKER, "second")
    notes = gitlab_api.state.mr_notes[iid]
    assert len(notes) == 1 and notes[0]["body"].startswith("second") and MARKER in notes[0]["body"]
    assert len(gitlab_api.posts()) == 1 and len(gitlab_api.calls_of("PUT", "/notes/")) == 1


def test_a_commit_note_is_edited_not_duplicated(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    client.upsert_commit_note(SHA, MARKER, "first")
    client.upsert_commit_note(SHA, MARKER, "second")
    notes = gitlab_api.commit_notes(SHA)
    assert len(notes) == 1 and notes[0]["body"].startswith("second")
    assert len(gitlab_api.posts()) == 1


@pytest.mark.parametrize("where", ["mr", "commit"])
def test_a_note_whose_answer_was_lost_is_not_posted_twice(
    client: GitLabClient, gitlab_api: FakeGitLab, where: str
) -> None:
    """Notes are posted without transient retries; after a 500 the client looks for the marker first."""
    iid = gitlab_api.add_merge_request("feature", "main")
    pattern = r"/notes$" if where == "mr" else r"/discussions$"
    gitlab_api.fail("POST", pattern, 500, after_apply=True)
    if where == "mr":
        client.upsert_mr_note(iid, MARKER, "body")
        assert len(gitlab_api.state.mr_notes[iid]) == 1
    else:
        client.upsert_commit_note(SHA, MARKER, "body")
        assert len(gitlab_api.commit_notes(SHA)) == 1
    assert len(gitlab_api.posts()) == 1


def test_a_note_refused_with_a_500_is_posted_once_more(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    gitlab_api.fail("POST", r"/discussions$", 500)
    client.upsert_commit_note(SHA, MARKER, "body")
    assert len(gitlab_api.commit_notes(SHA)) == 1 and len(gitlab_api.posts()) == 2


def test_a_note_on_a_missing_merge_request_is_a_404(client: GitLabClient, gitlab_api: FakeGitLab) -> None:
    with pytest.raises(GitLabError, match="404"):
        client.upsert_mr_note(99, MARKER, "body")
    assert gitlab_api.posts() == []
