"""The template a user copies (examples/gitlab/.gitlab-ci.yml), parsed and checked for the structure selfix needs:
a stage after the tests, ``when: on_failure``, the test job's JUnit report kept on failure and handed to the selfix
job through ``needs``, rules that skip ``selfix/`` branches, tags and forks, and only variables selfix reads.

GitLab's CI JSON schema is not on this machine (no PyPI package ships it), so the check is structural."""

from __future__ import annotations

import re

from selfix_action.gitlab_ci.settings import DEFAULT_OUTPUT_FILE, GITLAB_OPTIONS, TOKEN_VARIABLE, variable
from tests.helpers.gitlab_ci import TEMPLATE, template


def test_selfix_runs_in_a_stage_after_the_tests_on_failure() -> None:
    data = template()
    stages = data["stages"]
    assert stages.index(data["selfix"]["stage"]) > stages.index(data["test"]["stage"])
    rules = data["selfix"]["rules"]
    assert rules[-1] == {"when": "on_failure"}
    assert all(rule.get("when") == "never" for rule in rules[:-1])


def test_the_junit_report_reaches_the_selfix_job() -> None:
    data = template()
    artifacts = data["test"]["artifacts"]
    report = artifacts["reports"]["junit"]
    assert artifacts["when"] == "always"  # a failed job uploads nothing by default
    assert report in artifacts["paths"]  # reports:junit alone is not handed to later jobs
    assert {"job": "test", "artifacts": True} in data["selfix"]["needs"]
    assert data["selfix"]["variables"]["SELFIX_JUNIT_PATHS"] == report
    assert f"--junitxml={report}" in " ".join(data["test"]["script"])


def test_rules_skip_fix_branches_tags_and_forks() -> None:
    conditions = [rule.get("if", "") for rule in template()["selfix"]["rules"]]
    assert "$CI_COMMIT_TAG" in conditions
    for name in ("$CI_COMMIT_REF_NAME", "$CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"):
        [rule] = [c for c in conditions if c.startswith(name)]
        literal = rule.split("=~", 1)[1].strip()
        assert literal.startswith("/") and literal.endswith("/")
        pattern = literal[1:-1].replace("\\/", "/")
        assert re.match(pattern, "selfix/0123456789ab") and not re.match(pattern, "feature/selfix")
    assert any("$CI_MERGE_REQUEST_SOURCE_PROJECT_ID != $CI_MERGE_REQUEST_PROJECT_ID" in c for c in conditions)


def test_the_job_runs_selfix_gitlab_and_keeps_its_outputs() -> None:
    job = template()["selfix"]
    assert job["script"][-1] == "selfix gitlab"
    assert job["artifacts"]["reports"]["dotenv"] == DEFAULT_OUTPUT_FILE
    assert ".selfix/report/" in job["artifacts"]["paths"] and job["artifacts"]["when"] == "always"


def test_variables_are_ones_selfix_reads_and_no_secret_is_written() -> None:
    known = {variable(o.name) for o in GITLAB_OPTIONS} | {"SELFIX_REF"}
    assert set(template()["selfix"]["variables"]) <= known
    text = TEMPLATE.read_text(encoding="utf-8")
    assert TOKEN_VARIABLE in text  # named in the comment: a masked, protected CI/CD variable, never in the file
    assert "glpat-" not in text and TOKEN_VARIABLE + ":" not in text
