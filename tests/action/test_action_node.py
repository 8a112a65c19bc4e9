"""``selfix action`` on a JavaScript project, as the composite variant runs it after actions/setup-node and
``npm ci``: the failed run's mocha xunit report, the LLM engine (a local OpenAI-compatible server playing recorded
answers), the real Node sandbox, and one verified pull request against a local fake GitHub."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.helpers.action import action_env, git, invoke, make_repos, workflow_run_payload
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_providers import FakeProvider, openai_tool_call, serve
from tests.helpers.node_projects import install_into

pytestmark = pytest.mark.slow

MATH = "function add(a, b) {\n  return a - b;\n}\nfunction mul(a, b) {\n  return a * b;\n}\n"
MATH += "module.exports = { add, mul };\n"
SPEC = (
    "const assert = require('assert');\nconst m = require('../lib/math');\n"
    "describe('math', function () {\n  it('adds', function () { assert.strictEqual(m.add(1, 2), 3); });\n"
    "  it('multiplies', function () { assert.strictEqual(m.mul(2, 3), 6); });\n});\n"
)
PROJECT = {
    ".gitignore": "node_modules/\n",
    "package.json": json.dumps({"name": "p", "scripts": {"test": "mocha test/"}, "devDependencies": {"mocha": "*"}}),
    "lib/math.js": MATH,
    "test/math.test.js": SPEC,
}
QA = "const assert = require('assert');\nconst m = require('../lib/math');\n"
QA += "it('adds 2 and 2', () => assert.strictEqual(m.add(2, 2), 4));\n"


def _xunit_of_the_failed_run(workspace: Path, sha: str, tmp_path: Path) -> bytes:
    """The tests job: mocha with its xunit reporter at the failing commit, zipped as upload-artifact does."""
    checkout = tmp_path / "tests-job"
    shutil.copytree(workspace, checkout, symlinks=True)
    git(checkout, "checkout", "-q", sha)
    mocha = [str(checkout / "node_modules" / ".bin" / "mocha"), "test/", "--reporter", "xunit"]
    subprocess.run([*mocha, "--reporter-options", "output=report.xml"], cwd=checkout, capture_output=True, timeout=120)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.write(checkout / "report.xml", "report.xml")
    return buf.getvalue()


def test_a_mocha_projects_failed_run_gets_one_verified_pr(tmp_path: Path, fake: FakeGitHub) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    repos = make_repos(tmp_path, PROJECT)
    install_into(repos.workspace)  # the workflow's npm ci, before selfix runs
    fake.add_artifact(4242, "junit-results", _xunit_of_the_failed_run(repos.workspace, repos.feature_sha, tmp_path))
    detective = {"hypotheses": [{"title": "add subtracts", "confidence": 0.9, "file": "lib/math.js", "symbol": "add",
                                 "line_start": 1, "line_end": 3, "reasoning": "add(1, 2) gives -1",
                                 "proposed_fix": "return a + b"}]}  # fmt: skip
    fix = {"explanation": "add the operands", "edits": [{"file": "lib/math.js", "search": "a - b", "replace": "a + b"}]}
    script = {
        "report_hypotheses": [openai_tool_call("report_hypotheses", detective)],
        "write_reproduction_test": [
            openai_tool_call("write_reproduction_test", {"test_source": QA, "expected_failure": "AssertionError"})
        ],
        "propose_edits": [openai_tool_call("propose_edits", fix), openai_tool_call("propose_edits", fix)],
        "review_patch": [openai_tool_call("review_patch", {"verdict": "complete", "reason": "returns the sum"})],
    }
    provider = FakeProvider(by_tool=script, models=("m",))
    with serve(provider) as url:
        env = action_env(
            tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"),
            engine="openai", openai_api_key="sk-test", openai_base_url=url + "/v1", model="m", max_cost_usd="0",
            test_command="npm test",
        )  # fmt: skip
        env["PATH"] = f"{Path(node).parent}:{env['PATH']}"  # actions/setup-node's node on the runner
        run = invoke(env)
    assert (run.code, run.outputs["status"]) == (0, "healed"), run.out
    (pr,) = [call.body for call in fake.calls_of("POST", r"/pulls$")]
    assert git(repos.origin, "show", f"{pr['head']}:lib/math.js") == MATH.replace("a - b", "a + b").rstrip("\n")
    assert "math > adds" in pr["body"] and "mocha" in provider.calls("report_hypotheses")[0].prompt_text()
    # the behaviour probe watched add under mocha: the PR's confidence weighed what it saw
    report = json.loads(Path(run.outputs["report_path"]).with_name("report.json").read_text())
    assert report["behaviour"]["compared"] > 0
    assert "node_modules" not in git(repos.origin, "show", "--stat", pr["head"])
