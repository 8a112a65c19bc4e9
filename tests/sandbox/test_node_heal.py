"""A small real project per Node runner (jest with jest-junit, vitest on TypeScript, mocha, node's test runner),
each with a planted bug, healed end to end by ``selfix fix`` from the JUnit report the runner itself wrote in
"CI": the real sandbox (this machine's isolation), the real runner, the LLM engine through the OpenAI SDK
against a local server playing recorded answers. What is checked: the report's failing test is resolved, the
QA test fails on the bug, the patch edits only the source, and the whole suite passes with it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.toolchains.node import report_args
from tests.helpers.fake_providers import FakeProvider, openai_tool_call, serve
from tests.helpers.node_projects import install_into, write

pytestmark = pytest.mark.slow

NODE_SUM = "function add(a, b) {\n  return a - b;\n}\nfunction mul(a, b) {\n  return a * b;\n}\n"
PROJECTS: dict[str, dict[str, object]] = {
    "jest": {
        "source": "src/math.js",
        "files": {
            "src/math.js": NODE_SUM + "module.exports = { add, mul };\n",
            "test/math.test.js": "const { add, mul } = require('../src/math');\n"
            "describe('math', () => {\n  test('adds', () => { expect(add(1, 2)).toBe(3); });\n"
            "  test('multiplies', () => { expect(mul(2, 3)).toBe(6); });\n});\n",
        },
        "script": "jest",
        "ci": ["node_modules/.bin/jest", "--ci"],
        "qa": "const { add } = require('../src/math');\ntest('adds 2 and 2', () => { expect(add(2, 2)).toBe(4); });\n",
    },
    "vitest": {
        "source": "src/math.ts",
        "files": {
            "src/math.ts": "export function add(a: number, b: number): number {\n  return a - b;\n}\n"
            "export function mul(a: number, b: number): number {\n  return a * b;\n}\n",
            "test/math.test.ts": "import { describe, it, expect } from 'vitest';\n"
            "import { add, mul } from '../src/math';\ndescribe('math', () => {\n"
            "  it('adds', () => { expect(add(1, 2)).toBe(3); });\n"
            "  it('multiplies', () => { expect(mul(2, 3)).toBe(6); });\n});\n",
        },
        "script": "vitest run",
        "ci": ["node_modules/.bin/vitest", "run"],
        "qa": "import { it, expect } from 'vitest';\nimport { add } from '../src/math';\n"
        "it('adds 2 and 2', () => { expect(add(2, 2)).toBe(4); });\n",
    },
    "mocha": {
        "source": "lib/math.js",
        "files": {
            "lib/math.js": NODE_SUM + "module.exports = { add: add, mul: mul };\n",
            "test/math.test.js": "const assert = require('assert');\nconst m = require('../lib/math');\n"
            "describe('math', function () {\n  it('adds', function () { assert.strictEqual(m.add(1, 2), 3); });\n"
            "  it('multiplies', function () { assert.strictEqual(m.mul(2, 3), 6); });\n});\n",
        },
        "script": "mocha test/*.test.js",
        "ci": ["node_modules/.bin/mocha", "test/*.test.js"],
        "qa": "const assert = require('assert');\nconst m = require('../lib/math');\n"
        "it('adds 2 and 2', function () { assert.strictEqual(m.add(2, 2), 4); });\n",
    },
    "node": {
        "source": "src/math.mjs",
        "files": {
            "src/math.mjs": NODE_SUM.replace("function", "export function"),
            "test/math.test.mjs": "import { describe, it } from 'node:test';\nimport assert from 'node:assert';\n"
            "import { add, mul } from '../src/math.mjs';\ndescribe('math', () => {\n"
            "  it('adds', () => { assert.strictEqual(add(1, 2), 3); });\n"
            "  it('multiplies', () => { assert.strictEqual(mul(2, 3), 6); });\n});\n",
        },
        "script": "node --test test/",
        "ci": ["node", "--test", "test/"],
        "qa": "import { it } from 'node:test';\nimport assert from 'node:assert';\n"
        "import { add } from '../src/math.mjs';\nit('adds 2 and 2', () => { assert.strictEqual(add(2, 2), 4); });\n",
    },
}


def _ci_report(project: Path, runner: str, command: list[str], report: Path) -> None:
    """The suite run as CI runs it, writing its JUnit report with the runner's own reporter."""
    extra, env = report_args(runner, str(report), {**os.environ, "CI": "true"})
    argv = [*command, *extra] if runner != "node" else [command[0], *extra, *command[1:]]
    subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert report.is_file(), f"{runner} wrote no report"


@pytest.mark.parametrize("runner", sorted(PROJECTS))
def test_a_planted_bug_is_healed_end_to_end_from_the_runners_own_report(tmp_path: Path, runner: str) -> None:
    spec = PROJECTS[runner]
    source = str(spec["source"])
    project = write(tmp_path / "project", dict(spec["files"]))  # type: ignore[arg-type]
    dev = {} if runner == "node" else {runner: "*"}
    (project / "package.json").write_text(
        json.dumps({"name": "p", "scripts": {"test": spec["script"]}, "devDependencies": dev})
    )
    if runner != "node":
        install_into(project)
    report = tmp_path / "junit.xml"
    _ci_report(project, runner, list(spec["ci"]), report)  # type: ignore[arg-type]
    detective = {
        "hypotheses": [
            {
                "title": "add subtracts",
                "confidence": 0.9,
                "file": source,
                "symbol": "add",
                "line_start": 1,
                "line_end": 3,
                "reasoning": "add(1, 2) gives -1",
                "proposed_fix": "return a + b",
            }
        ]
    }
    fix = {"explanation": "add the operands", "edits": [{"file": source, "search": "a - b", "replace": "a + b"}]}
    script = {
        "report_hypotheses": [openai_tool_call("report_hypotheses", detective)],
        "write_reproduction_test": [
            openai_tool_call(
                "write_reproduction_test", {"test_source": spec["qa"], "expected_failure": "AssertionError"}
            )
        ],
        "propose_edits": [openai_tool_call("propose_edits", fix), openai_tool_call("propose_edits", fix)],
        "review_patch": [openai_tool_call("review_patch", {"verdict": "complete", "reason": "returns the sum"})],
    }
    provider = FakeProvider(by_tool=script, models=("m",))
    out = tmp_path / "out"
    with serve(provider) as url:
        code = main(
            ["fix", str(project), "--junit", str(report), "--engine", "openai", "--api-key", "k", "--model", "m",
             "--base-url", url + "/v1", "--max-cost", "0", "--out", str(out), "--quiet"]
        )  # fmt: skip
    result = json.loads((out / "report.json").read_text())
    assert code == 0, result.get("notes")
    assert result["stop_reason"] == "healed"
    assert result["patch"]["files"] == [source]
    assert "+  return a + b;" in (out / "patch.diff").read_text()
    detective_prompt = provider.calls("report_hypotheses")[0].prompt_text()
    assert "JavaScript/TypeScript project" in detective_prompt and "math > adds" in detective_prompt
    qa_prompt = provider.calls("write_reproduction_test")[0].prompt_text()
    assert "test file for the project's own test runner" in qa_prompt
    trace = (out / "trace.jsonl").read_text()
    assert "QA test fails on the unpatched code" in trace
    assert (project / source).read_text().count("a - b") == 1  # the user's tree is untouched
    if runner != "node":  # the behaviour probe watched add in the runner's process, unpatched and patched
        changed = {(c["input"], c["before"], c["after"]) for c in result["behaviour"]["changed"]}
        assert ("(1, 2)", "returns -1", "returns 3") in changed and result["behaviour"]["compared"] >= 9
