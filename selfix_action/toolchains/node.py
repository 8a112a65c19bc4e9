"""Node projects as their CI runs them: the package manager, the test runner, one test named from a JUnit case,
and the command that runs that test alone.

Each runner writes its JUnit report its own way (checked against the reporters' real output in
tests/toolchains/test_node_runners.py):

- jest-junit: ``classname`` and ``name`` are both the full title ("math add adds two numbers": the describe
  blocks and the test joined by spaces), no file;
- vitest (``--reporter=junit``): ``classname`` is the test file, ``name`` the titles joined by " > ";
- mocha's xunit: ``classname`` the describe blocks' full title, ``name`` the test's own title, ``file`` absolute;
- mocha-junit-reporter: ``name`` the full title, ``classname`` the test's own title, the file on the suite;
- node's test runner (``--test-reporter=junit``): ``name`` the test's own title, ``classname`` "test", the
  describe blocks as nested suites (``TestCaseResult.suites``), no file.

A name is (file or None, the full title): the full title is what jest ``-t``, vitest ``-t`` and mocha ``--grep``
match (a regular expression over the titles joined by spaces), so the selector anchors it and escapes it. Node's
``--test-name-pattern`` matches each test's own title (Node 20); the file narrows it.

Pure: ``package.json`` comes in as text, the lockfiles as names.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from selfix_action.errors import InputError
from selfix_action.junit import TestCaseResult
from selfix_action.repair.reported import TITLE_JOIN

RUNNERS = ("jest", "vitest", "mocha", "node")
# The lockfile that names the package manager, in the order one wins over another in the same folder.
LOCKFILES = (
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("package-lock.json", "npm"),
    ("npm-shrinkwrap.json", "npm"),
)


@dataclass(frozen=True)
class NodeProject:
    """What a Node project's own files say about how its CI tests it."""

    package_manager: str  # npm, pnpm or yarn
    runner: str  # jest, vitest, mocha or node
    test_script: str  # package.json's scripts.test ("" when none)
    workspaces: tuple[str, ...] = ()  # workspace globs (npm/yarn "workspaces"; pnpm's file is read elsewhere)


def detect_project(package_json: str, files: Collection[str]) -> NodeProject:
    """The project's package manager (from its lockfile; npm without one) and test runner (from ``scripts.test``,
    else its dev dependencies). ``files``: the names in the project's folder. InputError when package.json is
    not an object or names no runner selfix knows."""
    try:
        manifest = json.loads(package_json)
    except ValueError as exc:
        raise InputError(f"package.json is not JSON: {exc}") from exc
    if not isinstance(manifest, dict):
        raise InputError("package.json is not a JSON object")
    manager = next((name for lockfile, name in LOCKFILES if lockfile in files), "npm")
    scripts = manifest.get("scripts")
    scripts = scripts if isinstance(scripts, dict) else {}
    script = str(scripts.get("test", "") or "")
    deps: dict[str, object] = {}
    for key in ("devDependencies", "dependencies"):
        if isinstance(manifest.get(key), dict):
            deps.update(manifest[key])
    runner = _runner_in(script) or next((r for r in ("vitest", "jest", "mocha") if r in deps), "")
    if not runner:
        raise InputError(
            "no test runner selfix knows in package.json (scripts.test or the dependencies): "
            "jest, vitest, mocha or node --test"
        )
    workspaces = manifest.get("workspaces")
    if isinstance(workspaces, dict):  # yarn's {"packages": [...]}
        workspaces = workspaces.get("packages")
    globs = tuple(str(w) for w in workspaces) if isinstance(workspaces, list) else ()
    return NodeProject(manager, runner, script, globs)


def _runner_in(script: str) -> str:
    """The runner a test script starts (its first word that names one), "" when it names none."""
    for word in re.split(r"[\s;&|()]+", script):
        name = PurePosixPath(word).name
        if name in ("jest", "vitest", "mocha"):
            return name
        if name == "--test":
            return "node"
    return ""


@dataclass(frozen=True)
class NodeTestName:
    """One test as a Node runner names it: its file when the report says, and its titles (describe blocks, then
    the test's own), as far as the report separates them."""

    file: str | None
    titles: tuple[str, ...]

    @property
    def full_title(self) -> str:
        return " ".join(self.titles)


def node_test_id(name: NodeTestName) -> str:
    """The test's id in selfix's runs and reports: ``<spec file>::<title> > <title>``; a spec file alone (its
    load failed) is its path."""
    if not name.titles:
        return name.file or ""
    return f"{name.file or ''}::{TITLE_JOIN.join(name.titles)}"


def split_test_id(nodeid: str) -> NodeTestName:
    """``node_test_id`` read back (a title holding " > " reads as two: the sandbox keeps the names it made)."""
    file, sep, rest = nodeid.partition("::")
    if not sep:
        return NodeTestName(file or None, ())
    return NodeTestName(file or None, tuple(rest.split(TITLE_JOIN)))


def reported_name(runner: str, case: TestCaseResult, root: str = "") -> NodeTestName:
    """How ``runner``'s JUnit report names ``case`` (see the module's docstring). ``root``: the checkout's path in
    CI, taken off an absolute file."""
    if runner == "vitest":
        return NodeTestName(_relative(case.classname, root), tuple(case.name.split(" > ")))
    if runner == "node":
        return NodeTestName(_relative(case.file, root), (*(s for s in case.suites if s), case.name))
    if runner == "mocha" and case.file and case.classname and case.name.endswith(" " + case.classname):
        # mocha-junit-reporter: name = full title, classname = the test's own title.
        return NodeTestName(_relative(case.file, root), (case.name.removesuffix(" " + case.classname), case.classname))
    if runner == "mocha":  # xunit: classname = the describe blocks' full title, name = the test's own title
        parents = (case.classname,) if case.classname else ()
        return NodeTestName(_relative(case.file, root), (*parents, case.name))
    if runner == "jest":
        return NodeTestName(_relative(case.file, root), (case.name,))
    raise InputError(f"unknown test runner {runner!r}: one of {', '.join(RUNNERS)}")


def _relative(path: str | None, root: str) -> str | None:
    if not path:
        return None
    path = path.replace("\\", "/")
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path.removeprefix("./")


def single_test_args(runner: str, name: NodeTestName, scope: Sequence[str] = ()) -> list[str]:
    """The runner's arguments that run the test ``name`` alone (after the runner's own command: ``npx jest``,
    ``npx vitest``, ``npx mocha``, ``node``). ``scope``: the test paths the project's own command names, kept
    when the report names no file (node's runner would otherwise discover every ``*.test.js``, other runners'
    files included)."""
    files = [name.file] if name.file else list(scope)
    whole = f"^{re.escape(name.full_title)}$"
    if runner == "jest":
        return [*files, "-t", whole]
    if runner == "vitest":
        return ["run", *files, "-t", whole]
    if runner == "mocha":
        return [*files, "--grep", whole]
    if runner == "node":
        return ["--test", f"--test-name-pattern=^{re.escape(name.titles[-1])}$", *files]
    raise InputError(f"unknown test runner {runner!r}: one of {', '.join(RUNNERS)}")


def report_args(
    runner: str, report: str, environment: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The runner's arguments (and environment) that make it write a JUnit report to ``report``."""
    env = dict(environment or {})
    if runner == "jest":
        env["JEST_JUNIT_OUTPUT_FILE"] = report
        return ["--reporters=default", "--reporters=jest-junit"], env
    if runner == "vitest":
        return ["--reporter=default", "--reporter=junit", f"--outputFile.junit={report}"], env
    if runner == "mocha":
        return ["--reporter", "xunit", "--reporter-options", f"output={report}"], env
    if runner == "node":
        return [
            "--test-reporter=spec",
            "--test-reporter-destination=stdout",
            "--test-reporter=junit",
            f"--test-reporter-destination={report}",
        ], env
    raise InputError(f"unknown test runner {runner!r}: one of {', '.join(RUNNERS)}")


_SHELL_OPERATORS = ("&&", "||", ";", "|", ">", "<", "$(", "`")
_RUNNER_WORDS = {"jest": "jest", "vitest": "vitest", "mocha": "mocha", "_mocha": "mocha"}


def test_command(project: NodeProject) -> tuple[str, ...]:
    """The command selfix runs the project's tests with when none is given: the test script's own runner words
    (``mocha -t 5000 test/*.test.js``, ``vitest run``, ``node --test test/``) when the script is one plain
    command; the runner alone when it is more (``npm run build && jest``: selfix runs no build step; the
    workflow builds before selfix runs)."""
    script = project.test_script
    if script and not any(op in script for op in _SHELL_OPERATORS):
        try:
            words = shlex.split(script)
        except ValueError:
            words = []
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):  # NODE_ENV=test jest
            words = words[1:]
        if words[:1] == ["cross-env"]:
            words = words[1:]
            while words and "=" in words[0]:
                words = words[1:]
        if words and (PurePosixPath(words[0]).name in _RUNNER_WORDS or words[0] == "node"):
            return tuple(words)
    if project.runner == "node":
        return ("node", "--test")
    return (project.runner,)
