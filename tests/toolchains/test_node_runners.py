"""Each Node runner's real JUnit report, read by selfix, names the failing test so that the arguments selfix builds
run that test alone (selfix_action/toolchains/node.py against jest + jest-junit, vitest on TypeScript, mocha's
xunit reporter and node's own test runner). The runners are installed from the npm registry once per machine
into a cache; without node, npm or the registry the test skips, saying which."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.junit import Outcome, parse_report
from selfix_action.toolchains.node import report_args, reported_name, single_test_args
from tests.helpers.node_projects import node_runners

pytestmark = pytest.mark.slow

MATH = "function add(a, b) {\n  return a - b;\n}\nmodule.exports = { add };\n"
BODY = """
describe('math', () => {
  describe('add', () => {
    it('adds two numbers (2 + 3)', () => { CHECK(add(2, 3), 5); });
    it('adds zero', () => { CHECK(add(0, 0), 0); });
  });
  it('adds two numbers', () => { CHECK(1, 1); });
});
"""
FILES = {
    "package.json": '{"name": "calc", "private": true, "jest": {"testMatch": ["**/jest/**/*.test.js"]}}\n',
    "src/math.js": MATH,
    "jest/math.test.js": "const { add } = require('../src/math');\n"
    + BODY.replace("CHECK(", "expect(")
    .replace(", 5);", ").toBe(5);")
    .replace(", 0);", ").toBe(0);")
    .replace(", 1);", ").toBe(1);"),
    "vt/math.test.ts": "import { describe, it, expect } from 'vitest';\n"
    "import { createRequire } from 'node:module';\n"
    "const { add } = createRequire(import.meta.url)('../src/math') as { add: (a: number, b: number) => number };\n"
    + BODY.replace("CHECK(", "expect(")
    .replace(", 5);", ").toBe(5);")
    .replace(", 0);", ").toBe(0);")
    .replace(", 1);", ").toBe(1);"),
    "mocha/math.spec.js": "const assert = require('assert');\nconst { add } = require('../src/math');\n"
    + BODY.replace("CHECK(", "assert.strictEqual("),
    "node/math.test.js": "const { describe, it } = require('node:test');\nconst assert = require('node:assert');\n"
    "const { add } = require('../src/math');\n" + BODY.replace("CHECK(", "assert.strictEqual("),
}
# How CI runs the whole suite of each runner, and the command the single-test arguments follow.
WHOLE = {
    "jest": (["node_modules/.bin/jest"], []),
    "vitest": (["node_modules/.bin/vitest"], ["run", "vt"]),
    "mocha": (["node_modules/.bin/mocha"], ["mocha/math.spec.js"]),
    "node": (["node"], ["--test", "node/math.test.js"]),
}
FAILING = "adds two numbers (2 + 3)"


@pytest.fixture(scope="module")
def runners() -> Path:
    return node_runners()


@pytest.fixture
def project(tmp_path: Path, runners: Path) -> Iterator[Path]:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "node_modules").symlink_to(runners / "node_modules")
    yield tmp_path


def run(project: Path, runner: str, args: list[str], report: Path) -> None:
    command, _ = WHOLE[runner]
    extra, env = report_args(runner, str(report), {**os.environ, "CI": "true"})
    argv = [*command, *(extra if runner != "vitest" else []), *args, *(extra if runner == "vitest" else [])]
    if runner == "node":  # the reporter options go before --test's files
        argv = [*command, *extra, *args]
    subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert report.is_file(), f"{runner} wrote no report: {argv}"


@pytest.mark.parametrize("runner", ["jest", "vitest", "mocha", "node"])
def test_the_failing_test_named_from_the_report_runs_alone(project: Path, runner: str) -> None:
    whole = project / f"{runner}-whole.xml"
    run(project, runner, WHOLE[runner][1], whole)
    cases = parse_report(whole)
    failing = [c for c in cases if c.outcome is Outcome.FAILED]
    assert len(failing) == 1 and len(cases) == 3, [(c.classname, c.name, c.outcome) for c in cases]
    name = reported_name(runner, failing[0], str(project))
    assert name.full_title == f"math add {FAILING}"
    # The one test, and nothing else: not "adds two numbers" (a prefix of its title), nor its siblings.
    alone = project / f"{runner}-alone.xml"
    scope = [a for a in WHOLE[runner][1] if a.endswith(".js")]  # the paths CI's command names
    run(project, runner, single_test_args(runner, name, scope), alone)
    ran = [c for c in parse_report(alone) if c.outcome is not Outcome.SKIPPED]
    assert [(reported_name(runner, c, str(project)).full_title, c.outcome) for c in ran] == [
        (f"math add {FAILING}", Outcome.FAILED)
    ]
