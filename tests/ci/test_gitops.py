"""selfix's own git, for every front end: branch names and refs are safe before they reach git, git is not
steerable by the checkout, and the checkout's token is not in .git/config while project code runs (issue:
isolation in the Docker action, item 4; the action healing with the token out: tests/action/test_action_security.py)."""

from __future__ import annotations

import base64
import http.server
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.ci.gitops import Git, GitError, check_ref, fix_branch, sanitize_component, token_header

TOKEN_HEADER = "AUTHORIZATION: basic c2VsZml4LXRlc3QtdG9rZW4="


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=60, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.py").write_text("A = 1\n")
    git(root, "add", "a.py")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return root


def plant_fsmonitor(repo: Path, marker: Path) -> None:
    hook = repo.parent / "evil.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))


def test_a_planted_fsmonitor_and_hooks_never_run(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plant_fsmonitor(repo, marker)
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "post-checkout").chmod(0o755)
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.py").write_text("A = 2\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "two")
    marker.unlink(missing_ok=True)  # the setup's own git ran them; from here on only selfix's does

    ours = Git(repo)
    assert ours.is_clean()
    ours.checkout_detached(first)
    assert not marker.exists()


def test_config_planted_after_the_credentials_were_taken_is_undone(repo: Path, tmp_path: Path) -> None:
    git(repo, "config", "http.https://github.com/.extraheader", TOKEN_HEADER)
    ours = Git(repo)
    assert ours.take_credentials() == 1
    config = (repo / ".git" / "config").read_text()
    assert "extraheader" not in config and "c2VsZml4" not in config  # project code will not find it here
    plant_fsmonitor(repo, tmp_path / "ran")  # what setup_command or a test could do in the workspace
    ours.head()
    assert (repo / ".git" / "config").read_text() == config
    assert ours.warnings and "restored" in ours.warnings[0]
    ours.restore_credentials()
    assert git(repo, "config", "--get", "http.https://github.com/.extraheader").strip() == TOKEN_HEADER


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization", ""))
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", _Recorder.seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_taken_credential_still_reaches_the_server_of_network_commands(
    repo: Path, recorder: tuple[str, list[str]]
) -> None:
    base, seen = recorder
    git(repo, "config", f"http.{base}.extraheader", TOKEN_HEADER)
    git(repo, "remote", "add", "origin", base + "r.git")
    ours = Git(repo)
    assert ours.take_credentials() == 1
    with pytest.raises(Exception, match="ls-remote"):
        ours.run("ls-remote", "origin")  # the server answers 404; what matters is what it was sent
    assert seen and seen[0] == TOKEN_HEADER.split(": ", 1)[1]
    assert "extraheader" not in (repo / ".git" / "config").read_text()


def test_without_a_checkout_credential_the_github_token_authenticates(
    repo: Path, recorder: tuple[str, list[str]]
) -> None:
    """persist-credentials: false leaves nothing in .git/config: selfix's git uses the github_token input."""
    base, seen = recorder
    git(repo, "remote", "add", "origin", base + "r.git")
    ours = Git(repo, token_credential=token_header(base, "ghs_inputtoken"))
    assert ours.take_credentials() == 0
    with pytest.raises(Exception, match="ls-remote"):
        ours.run("ls-remote", "origin")
    assert seen and seen[0] == "basic " + base64.b64encode(b"x-access-token:ghs_inputtoken").decode()
    assert "ghs_inputtoken" not in (repo / ".git" / "config").read_text()


def test_the_github_token_input_wins_over_the_checkout_credential(repo: Path, recorder: tuple[str, list[str]]) -> None:
    """An App token given as github_token pushes (so CI starts), not the checkout's GITHUB_TOKEN; one header only."""
    base, seen = recorder
    git(repo, "config", f"http.{base}.extraheader", TOKEN_HEADER)
    git(repo, "remote", "add", "origin", base + "r.git")
    ours = Git(repo, token_credential=token_header(base, "ghs_apptoken"))
    assert ours.take_credentials() == 1
    with pytest.raises(Exception, match="ls-remote"):
        ours.run("ls-remote", "origin")
    assert seen == ["basic " + base64.b64encode(b"x-access-token:ghs_apptoken").decode()]
    ours.restore_credentials()  # the checkout's own credential goes back for the workflow's later steps
    assert git(repo, "config", "--get", f"http.{base}.extraheader").strip() == TOKEN_HEADER


def test_a_credential_in_a_remotes_url_is_taken_and_put_back_an_ssh_user_stays(repo: Path) -> None:
    token_url = "https://gitlab-ci-token:glcbt-SECRET123@gitlab.example.com/g/p.git"
    git(repo, "remote", "add", "origin", token_url)
    git(repo, "remote", "add", "mirror", "ssh://git@example.com/g/p.git")
    ours = Git(repo)
    assert ours.take_credentials() == 1
    config = (repo / ".git" / "config").read_text()
    assert "SECRET123" not in config and "gitlab-ci-token" not in config
    assert git(repo, "remote", "get-url", "origin").strip() == "https://gitlab.example.com/g/p.git"
    assert git(repo, "remote", "get-url", "mirror").strip() == "ssh://git@example.com/g/p.git"
    ours.restore_credentials()
    assert git(repo, "remote", "get-url", "origin").strip() == token_url
    assert git(repo, "config", "--get-all", "remote.origin.url").strip() == token_url  # put back once, not added


@pytest.mark.parametrize("name", ["--upload-pack=x", "a..b", "a@{1}", "x.lock", "a b", "/abs", "a//b", "-x"])
def test_unsafe_refs_never_reach_git(name: str) -> None:
    with pytest.raises(GitError):
        check_ref(name)


def test_sanitized_branch_is_safe() -> None:
    branch = fix_branch(sanitize_component("../--evil; rm -rf ~ @{x}.lock"))
    assert check_ref(branch) == branch and branch.startswith("selfix/")
