"""``selfix gitlab`` on a project in a monorepo's subfolder: no variable names the folder, the report's tests are
in ``backend/``, so the heal runs there and the merge request's branch holds the repository-relative fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.action import BACKEND, FIXED_CALC, git, make_repos, remote_branches
from tests.helpers.fake_gitlab import FakeGitLab
from tests.helpers.gitlab_ci import gitlab_env, invoke


@pytest.mark.slow
def test_the_gitlab_job_finds_and_heals_a_project_in_a_subfolder(tmp_path: Path, gitlab_api: FakeGitLab) -> None:
    repos = make_repos(tmp_path, BACKEND)

    run = invoke(gitlab_env(tmp_path, gitlab_api, repos))

    assert run.code == 0 and run.outputs["SELFIX_STATUS"] == "healed", run.out
    assert "the project in backend/, found from the report" in run.out
    (branch,) = [b for b in remote_branches(repos) if b.startswith("selfix/")]
    assert git(repos.origin, "show", f"{branch}:backend/calc.py") + "\n" == FIXED_CALC
    [mr] = gitlab_api.open_mrs()
    assert "backend/calc.py" in mr["description"]
