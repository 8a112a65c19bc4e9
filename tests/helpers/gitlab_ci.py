"""The GitLab front end's integration tests: the job environment GitLab's runner gives ``selfix gitlab`` (the
predefined ``CI_*`` variables and the template's ``SELFIX_*`` variables), the failing commit checked out with its
JUnit report where the template's test job leaves it, and one run in-process."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from selfix_action.commands.gitlab_cmd import run_gitlab
from selfix_action.heal import HealContext
from selfix_action.repair.loop import HealResult
from tests.helpers.action import JUNIT, Repos, git
from tests.helpers.fake_gitlab import FakeGitLab
from tests.helpers.projects import REPO_ROOT

TEMPLATE = REPO_ROOT / "examples" / "gitlab" / ".gitlab-ci.yml"
GITLAB_TOKEN = "glpat-selfixtesttoken0123"
CI_JOB_TOKEN = "glcbt-jobtoken0123456789"


# The failing run's report for UNHEALABLE (tests.helpers.action), as the template's test job leaves it.
UNHEALABLE_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="1" failures="1" errors="0">
<testcase classname="tests.test_calc" name="test_fib" file="tests/test_calc.py" time="0.01">
<failure message="assert [1, 2, 3] == [1, 1, 2]">assert [1, 2, 3] == [1, 1, 2]</failure></testcase>
</testsuite></testsuites>
"""


def template() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    return data


def template_variables() -> dict[str, str]:
    """The selfix job's ``variables:`` of the template (its defaults), the install pin left out."""
    variables = template()["selfix"].get("variables") or {}
    return {k: str(v) for k, v in variables.items() if k != "SELFIX_REF"}


def template_junit_path() -> str:
    return str(template()["test"]["artifacts"]["reports"]["junit"])


@dataclass
class Run:
    code: int
    out: str
    outputs: dict[str, str]


def gitlab_env(
    tmp_path: Path,
    fake: FakeGitLab,
    repos: Repos,
    *,
    branch: str = "feature/avg",
    mr_iid: int | None = None,
    source_project_id: int | None = None,
    token: str = GITLAB_TOKEN,
    junit: str = JUNIT,
    **variables: str,
) -> dict[str, str]:
    """The job's environment on the failing commit of ``branch`` (a merge request pipeline with ``mr_iid``)."""
    workspace = repos.workspace
    git(workspace, "checkout", "-q", "--detach", repos.feature_sha)  # the runner checks out CI_COMMIT_SHA
    (workspace / template_junit_path()).write_text(junit)  # the test job's artifact, through `needs`
    project = fake.state
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(tmp_path),
        "GITLAB_CI": "true",
        "CI": "true",
        "CI_SERVER_URL": fake.url,
        "CI_API_V4_URL": f"{fake.url}/api/v4",
        "CI_PROJECT_ID": str(project.project_id),
        "CI_PROJECT_PATH": project.path,
        "CI_PROJECT_DIR": str(workspace),
        "CI_COMMIT_SHA": repos.feature_sha,
        "CI_COMMIT_REF_NAME": branch,
        "CI_COMMIT_AUTHOR": "dev <dev@example.com>",
        "CI_DEFAULT_BRANCH": project.default_branch,
        "CI_PIPELINE_ID": "777",
        "CI_PIPELINE_URL": f"{fake.url}/{project.path}/-/pipelines/777",
        "CI_PIPELINE_SOURCE": "merge_request_event" if mr_iid else "push",
        "CI_JOB_TOKEN": CI_JOB_TOKEN,
        "SELFIX_GITLAB_PUSH_URL": str(repos.origin),  # the bare repository standing in for GitLab's
        "SELFIX_TEST_COMMAND": f"{sys.executable} -m pytest",
        **template_variables(),
        **variables,
    }
    if token:
        env["SELFIX_GITLAB_TOKEN"] = token
    if mr_iid is not None:
        env.update(
            CI_MERGE_REQUEST_IID=str(mr_iid),
            CI_MERGE_REQUEST_SOURCE_BRANCH_NAME=branch,
            CI_MERGE_REQUEST_TARGET_BRANCH_NAME=project.default_branch,
            CI_MERGE_REQUEST_PROJECT_ID=str(project.project_id),
            CI_MERGE_REQUEST_SOURCE_PROJECT_ID=str(source_project_id or project.project_id),
        )
    return env


def parse_dotenv(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)


def invoke(env: dict[str, str], healer: Callable[[HealContext], HealResult] | None = None) -> Run:
    out, err = io.StringIO(), io.StringIO()
    code = run_gitlab(env, out, err, healer=healer)
    dotenv = Path(env.get("CI_PROJECT_DIR", ".")) / ".selfix" / "selfix.env"
    return Run(code, out.getvalue() + err.getvalue(), parse_dotenv(dotenv))
