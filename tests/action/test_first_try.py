"""The action on the first try, as a new user gets it: the environment the runner builds (every input of action.yml
at its default, the job token, the checkout's credential in .git/config), the JUnit artifact a real pytest run
uploaded, the real sandbox and the offline engine. One verified PR, nothing else written, nothing pushed to the
failing branch or the default branch."""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from selfix_action.ci.gitops import fingerprint
from tests.helpers.action import (
    FIXED_CALC,
    HEALABLE,
    JOB_TOKEN,
    REPO,
    Repos,
    action_env,
    comment_payload,
    git,
    invoke,
    make_repos,
    runner_inputs,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub

pytestmark = pytest.mark.slow
F2P = "tests/test_calc.py::test_limit"
CHECKOUT_HEADER = "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{JOB_TOKEN}".encode()).decode()


def runner_env(tmp_path: Path, fake: FakeGitHub, repos: Repos, event: str, data: dict[str, object]) -> dict[str, str]:
    """The runner's context variables and only the inputs it passes by default: no input given by the test."""
    env = {k: v for k, v in action_env(tmp_path, fake, repos, event, data).items() if not k.startswith("INPUT_")}
    env.update(runner_inputs())
    # actions/checkout's default (persist-credentials: true) leaves the job token in .git/config.
    git(repos.workspace, "config", "--local", "http.https://github.com/.extraheader", CHECKOUT_HEADER)
    return env


def junit_of_a_real_run(repos: Repos, tmp_path: Path) -> bytes:
    """The tests workflow of examples/workflows/tests.yml: pytest --junit-xml at the failing commit, zipped as the
    artifact upload-artifact makes."""
    checkout = tmp_path / "tests-job"
    shutil.copytree(repos.workspace, checkout)
    git(checkout, "checkout", "-q", repos.feature_sha)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junit-xml=reports/junit.xml"],
        cwd=checkout,
        capture_output=True,
        timeout=120,
        check=False,
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.write(checkout / "reports" / "junit.xml", "junit.xml")
    return buf.getvalue()


def heads(repos: Repos) -> dict[str, str]:
    out = git(repos.origin, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
    return dict(line.split() for line in out.splitlines())


def assert_one_verified_pr(fake: FakeGitHub, repos: Repos, run_out: str, base: str) -> dict[str, object]:
    pulls = fake.calls_of("POST", r"/pulls$")
    assert len(pulls) == 1, run_out
    pr = pulls[0].body
    assert pr["base"] == base and pr["head"] == f"selfix/{fingerprint(base, [F2P])}"
    assert "**Checked:**" in pr["body"] and "Isolation: `" in pr["body"] and "**CI on this branch:**" in pr["body"]
    after = heads(repos)
    assert after["main"] == repos.main_sha and after[base] == repos.feature_sha  # nothing pushed to either
    assert git(repos.origin, "show", f"{pr['head']}:calc.py") == FIXED_CALC.rstrip("\n")
    # The checkout's credential is back in .git/config for the workflow's later steps.
    assert git(repos.workspace, "config", "--get", "http.https://github.com/.extraheader") == CHECKOUT_HEADER
    return pr


def test_failed_workflow_run_gets_one_verified_pr_with_every_default(tmp_path: Path, fake: FakeGitHub) -> None:
    repos = make_repos(tmp_path, HEALABLE)
    fake.add_artifact(4242, "junit-results", junit_of_a_real_run(repos, tmp_path))
    env = runner_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    assert env["INPUT_CONFIG_FILE"] == ".github/selfix.yml" and env["INPUT_GITHUB_TOKEN"] == JOB_TOKEN
    run = invoke(env)
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert_one_verified_pr(fake, repos, run.out, "feature/avg")
    assert run.outputs["pr_url"] == f"https://github.com/{REPO}/pull/101"
    assert [d["ref"] for d in fake.state.dispatches] == [f"selfix/{fingerprint('feature/avg', [F2P])}"]
    assert run.summary.startswith("# selfix: healed")


def test_selfix_fix_comment_gets_one_verified_pr_with_every_default(tmp_path: Path, fake: FakeGitHub) -> None:
    repos = make_repos(tmp_path, HEALABLE)
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    fake.state.permissions["Codertocat"] = "write"
    env = runner_env(tmp_path, fake, repos, "issue_comment", comment_payload("/selfix fix", number=number))
    run = invoke(env)
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    assert_one_verified_pr(fake, repos, run.out, "feature/avg")
    (comment,) = fake.state.issue_comments.values()  # one tracking comment, edited to point at the fix PR
    assert "fix proposed in #" in comment["body"]
