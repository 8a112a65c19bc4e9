"""A project in a monorepo's subfolder, healed by the action from its CI's report (CI ran ``cd backend && pytest``):
pytest runs in ``backend/`` as the CI's did, and the fix branch holds the repository-relative patch."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.action import (
    BACKEND,
    FIXED_CALC,
    action_env,
    git,
    invoke,
    junit_zip,
    make_repos,
    remote_branches,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub


@pytest.mark.slow
def test_the_action_heals_a_project_in_a_subfolder_from_its_ci_report(tmp_path: Path, fake: FakeGitHub) -> None:
    repos = make_repos(tmp_path, BACKEND)
    fake.add_artifact(4242, "junit-results", junit_zip())
    payload = workflow_run_payload(repos.feature_sha, "feature/avg")
    env = action_env(tmp_path, fake, repos, "workflow_run", payload, working_directory="backend")

    run = invoke(env)

    assert run.outputs["status"] == "healed", run.out
    assert Path(run.outputs["patch_path"]).read_text().startswith("diff --git a/backend/calc.py b/backend/calc.py")
    (branch,) = [b for b in remote_branches(repos) if b.startswith("selfix/")]
    assert git(repos.origin, "show", f"{branch}:backend/calc.py") + "\n" == FIXED_CALC
    assert git(repos.origin, "ls-tree", "--name-only", branch) == "README.md\nbackend"  # nothing at the root
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert "backend/calc.py" in pr["body"]
