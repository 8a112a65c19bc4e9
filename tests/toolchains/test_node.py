"""Node projects (selfix_action/toolchains/node.py): the package manager and runner from the project's own files,
a test named from each runner's JUnit report shape, and the arguments that run that test alone. The shapes are the
reporters' own (tests/toolchains/test_node_runners.py checks them against the real runners)."""

from __future__ import annotations

import json

import pytest

from selfix_action.errors import InputError
from selfix_action.junit import Outcome, TestCaseResult
from selfix_action.toolchains.node import NodeTestName, detect_project, report_args, reported_name, single_test_args

ROOT = "/home/runner/work/app/app"


def case(classname: str, name: str, file: str | None = None, suites: tuple[str, ...] = ()) -> TestCaseResult:
    return TestCaseResult(
        report="r.xml", classname=classname, name=name, file=file, line=None, nodeid=None,
        outcome=Outcome.FAILED, duration=None, message="", text="", suites=suites,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("manifest", "files", "expected"),
    [
        ({"scripts": {"test": "jest --ci"}}, {"package-lock.json"}, ("npm", "jest")),
        ({"scripts": {"test": "vitest run"}}, {"pnpm-lock.yaml", "package-lock.json"}, ("pnpm", "vitest")),
        ({"scripts": {"test": "NODE_ENV=test ./node_modules/.bin/mocha -R dot"}}, {"yarn.lock"}, ("yarn", "mocha")),
        ({"scripts": {"test": "node --test test/"}}, set(), ("npm", "node")),
        ({"scripts": {"test": "npm run build && jest"}}, set(), ("npm", "jest")),
        ({"devDependencies": {"vitest": "^2"}}, set(), ("npm", "vitest")),  # no test script: the dependency
    ],
)
def test_the_package_manager_comes_from_the_lockfile_and_the_runner_from_the_test_script(
    manifest: dict, files: set[str], expected: tuple[str, str]
) -> None:
    project = detect_project(json.dumps(manifest), files)
    assert (project.package_manager, project.runner) == expected


def test_workspaces_and_what_is_refused() -> None:
    assert detect_project('{"scripts": {"test": "jest"}, "workspaces": ["packages/*"]}', set()).workspaces == (
        "packages/*",
    )
    yarn = '{"scripts": {"test": "jest"}, "workspaces": {"packages": ["apps/*"]}}'
    assert detect_project(yarn, set()).workspaces == ("apps/*",)
    with pytest.raises(InputError, match="not JSON"):
        detect_project("{", set())
    with pytest.raises(InputError, match="no test runner selfix knows"):
        detect_project('{"scripts": {"test": "ava"}}', set())


@pytest.mark.parametrize(
    ("runner", "reported", "expected"),
    [
        (
            "jest",
            case("math add adds two numbers", "math add adds two numbers"),
            (None, ("math add adds two numbers",)),
        ),
        (
            "vitest",
            case("vt/math.test.ts", "math > add > adds two numbers"),
            ("vt/math.test.ts", ("math", "add", "adds two numbers")),
        ),
        (
            "mocha",  # xunit
            case("math add", "adds two numbers", f"{ROOT}/test/math.test.js"),
            ("test/math.test.js", ("math add", "adds two numbers")),
        ),
        (
            "mocha",  # mocha-junit-reporter
            case("adds two numbers", "math add adds two numbers", f"{ROOT}/test/math.test.js", ("add",)),
            ("test/math.test.js", ("math add", "adds two numbers")),
        ),
        ("node", case("test", "adds two numbers", None, ("math", "add")), (None, ("math", "add", "adds two numbers"))),
        ("node", case("test", "top level"), (None, ("top level",))),
    ],
)
def test_each_runners_report_names_the_test_by_its_file_and_full_title(
    runner: str, reported: TestCaseResult, expected: tuple[str | None, tuple[str, ...]]
) -> None:
    name = reported_name(runner, reported, ROOT)
    assert (name.file, name.titles) == expected
    assert name.full_title == " ".join(expected[1])


def test_the_arguments_run_one_test_whatever_its_title_holds() -> None:
    name = NodeTestName("test/a.test.js", ("parse", "handles (a|b)* and $1"))
    assert single_test_args("jest", name) == ["test/a.test.js", "-t", r"^parse\ handles\ \(a\|b\)\*\ and\ \$1$"]
    assert single_test_args("vitest", name)[:2] == ["run", "test/a.test.js"]
    assert single_test_args("mocha", name) == ["test/a.test.js", "--grep", r"^parse\ handles\ \(a\|b\)\*\ and\ \$1$"]
    assert single_test_args("node", name) == [
        "--test",
        r"--test-name-pattern=^handles\ \(a\|b\)\*\ and\ \$1$",
        "test/a.test.js",
    ]
    assert report_args("jest", "/tmp/r.xml")[1] == {"JEST_JUNIT_OUTPUT_FILE": "/tmp/r.xml"}
    with pytest.raises(InputError, match="unknown test runner"):
        single_test_args("ava", name)
