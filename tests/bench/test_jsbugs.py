"""JavaScript real-bug tasks (BugsJS): the task file, the xunit reading, the syntax judge, and one synthetic bug
built, materialized, reported and judged end to end from a git repository made here (no BugsJS, no network).

The synthetic project has no dependencies; its "mocha" is a small node script that takes mocha's reporter options
(``-R xunit --reporter-options output=FILE``) and writes an xunit report, so the same code paths run as for
BugsJS's projects."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from selfix_action.heal import EngineChoice
from selfix_bench import jsbugs
from selfix_bench.base import patch_digest
from selfix_bench.jsbugs import (
    JsBugTask,
    command_for,
    compare_to_fix,
    compared,
    parse_xunit,
    same_syntax,
    summarize,
    task_from_data,
    with_reporter,
)


def _task(**changes: object) -> JsBugTask:
    data = {
        "id": "Hexo-3",
        "project": "Hexo",
        "repo": "BugsJS/hexo",
        "bug": 3,
        "commits": {"buggy": "a" * 40, "test": "b" * 40, "fix": "c" * 40, "full": "d" * 40},
        "test_cmd": ("node_modules/.bin/_mocha", "test/index.js"),
        "runner": "mocha",
        "install": {"manager": "npm", "flags": ["--ignore-scripts"]},
        "f2p": ({"file": None, "classname": "Hexo Helpers is", "name": "is_home"},),
        "p2p": ({"file": None, "classname": "Hexo Helpers is", "name": "is_post"},),
        "env_failures": (),
        "fix_paths": ("lib/plugins/helper/is.js",),
        "test_paths": ("test/scripts/helpers/is.js",),
        "versions": {"mocha": "2.5.3", "node": "v20.0.0"},
        "meta": {"scope": "suite"},
    }
    data.update(changes)
    return JsBugTask(**data)  # type: ignore[arg-type]


def test_task_file_round_trip() -> None:
    task = _task()
    data = json.loads(task.to_json())
    assert data["kind"] == "jsbug" and data["schema"] == jsbugs.SCHEMA
    assert data["test_cmd"] == ["node_modules/.bin/_mocha", "test/index.js"]
    assert task_from_data(data) == task


def test_a_task_file_of_another_kind_is_refused() -> None:
    with pytest.raises(jsbugs.InputError):
        task_from_data({"kind": "realbug"})


def test_the_reporter_goes_after_the_runner_and_globs_stay_literal(tmp_path: Path) -> None:
    argv = with_reporter(["node_modules/.bin/mocha", "-t", "15000", "test/*.test.js"], tmp_path / "r.xml")
    assert argv[:4] == ["node_modules/.bin/mocha", "-R", "xunit", "--reporter-options"]
    assert argv[4] == f"output={tmp_path / 'r.xml'}" and argv[-1] == "test/*.test.js"


def test_the_command_runs_the_changed_test_files_or_the_suite() -> None:
    changed = command_for("ESLint", ["tests/lib/rules/semi.js", "tests/fixtures/x.js", "docs/rules/semi.md"])
    assert changed == ["node_modules/.bin/_mocha", "-t", "10000", "tests/lib/rules/semi.js"]
    assert command_for("Hexo", ["test/scripts/helpers/is.js"]) == ["node_modules/.bin/_mocha", "test/index.js"]
    assert command_for("Hessian.js", ["test/map.test.js"])[-1] == "test/*.test.js"
    assert command_for("Hessian.js", ["test/map.test.js"], "changed")[-1] == "test/map.test.js"


XUNIT = """noise printed first
<testsuite name="Mocha Tests" tests="5" failures="2" errors="0" skipped="1">
<testcase classname="map" name="decodes null key" file="/proj/test/map.test.js" time="0"/>
<testcase classname="map" name="writes Map" file="/proj/test/map.test.js" time="0"><failure>boom</failure></testcase>
<testcase classname="quotes valid" name="a\u2028b" time="0"/>
<testcase classname="quotes valid" name="a\u2028b" time="0"><failure>x</failure></testcase>
<testcase classname="skip" name="later" time="0"><skipped/></testcase>
</testsuite>"""


def test_the_xunit_report_is_read_by_file_classname_and_name() -> None:
    results = parse_xunit(XUNIT, Path("/proj"))
    assert results[("test/map.test.js", "map", "decodes null key")] == "passed"
    assert results[("test/map.test.js", "map", "writes Map")] == "failed"
    assert results[(None, "quotes valid", "a\u2028b")] == "failed"  # repeated title: failed when any case failed
    assert results[(None, "skip", "later")] == "skipped"


BUGGY_JS = """\
// clamp x into [low, high]
function clamp(x, low, high) {
  if (x < low) return low;
  if (x > high) return low;
  return x;
}
module.exports = clamp;
"""
FIXED_JS = BUGGY_JS.replace("return low;\n  return x", "return high;\n  return x")
FIXED_OTHER_LAYOUT = """\
/* the developers' fix, written another way */
function clamp(x, low, high)
{
    if (x < low) return low;   // below
    if (x > high) return high;
    return x;
}

module.exports = clamp;
"""


def test_same_code_with_other_comments_and_layout_has_the_same_syntax() -> None:
    assert same_syntax(FIXED_JS, FIXED_OTHER_LAYOUT)


def test_a_changed_operator_or_value_is_not_the_same_syntax() -> None:
    assert not same_syntax(FIXED_JS, FIXED_JS.replace("x > high", "x >= high"))
    assert not same_syntax(FIXED_JS, BUGGY_JS)


def test_the_patch_is_the_fix_only_in_the_files_the_developers_changed() -> None:
    path = "lib/clamp.js"
    assert compare_to_fix({path: FIXED_OTHER_LAYOUT}, {path: FIXED_JS}, {path: BUGGY_JS})
    assert not compare_to_fix({path: FIXED_JS, "lib/other.js": "x"}, {path: FIXED_JS}, {path: BUGGY_JS})
    # a file the developers fixed and the patch left as it was
    both = {path: FIXED_JS, "lib/b.js": "let b = 2;\n"}
    assert not compare_to_fix({path: FIXED_JS}, both, {path: BUGGY_JS, "lib/b.js": "let b = 1;\n"})


def test_the_report_counts_resolved_and_confidence_levels() -> None:
    records = [
        {"task": "Hexo-3", "project": "Hexo", "resolved": True, "same_syntax": True, "confidence": "high"},
        {"task": "Hexo-5", "project": "Hexo", "resolved": False, "same_syntax": False, "confidence": "low"},
        {"task": "ESLint-1", "project": "ESLint", "resolved": False, "stop_reason": "refused: JavaScript"},
    ]
    hexo7 = {"task": "Hexo-7", "project": "Hexo", "resolved": True, "same_syntax": False, "confidence": "high"}
    records.append({**hexo7, "diff": "the patch read"})
    records.append({"task": "Hexo-8", "project": "Hexo", "resolved": True, "same_syntax": False, "confidence": "high"})
    reviews = {"Hexo-7": {patch_digest("the patch read"): {"verdict": "partial", "argument": "x"}}}
    text = "\n".join(summarize(records, reviews))
    assert "tasks: 5 (1 refused)" in text
    assert "resolved: 3/5" in text and "read and argued correct): 1/5" in text
    assert "partial 1, wrong 0, unread 1, unresolved 2" in text
    assert "confidence high: correct: 1/3" in text and "partial or wrong: Hexo-7 (partial); unread 1" in text
    assert "confidence low: correct: 0/1 " in text and "Hexo-5 (unresolved)" in text
    # a verdict holds for the patch it read: another run's other patch for Hexo-7 is unread
    later = [{**r, "diff": "another patch"} if r["task"] == "Hexo-7" else r for r in records]
    assert "partial 0, wrong 0, unread 2" in "\n".join(summarize(later, reviews))
    # paired with the earlier run: Hexo-3 correct in both, Hexo-5 resolved in the later run only
    later = [{**r, "resolved": True, "same_syntax": True} if r["task"] == "Hexo-5" else r for r in records]
    pairs = compared(later, records, reviews)
    assert pairs[0].startswith("paired with the earlier run, resolved: both 3, only this run 1, only the earlier run 0")
    assert "correct: both 1, only this run 1, only the earlier run 0, neither 3 of 5; exact McNemar p = 1" in pairs[1]


# -- one synthetic bug, end to end ---------------------------------------------------------------------
RUNNER_JS = r"""
// A stand-in for mocha: runs test/*.test.js (each exports {name: fn}) and writes an xunit report.
const fs = require('fs'), path = require('path');
const args = process.argv.slice(2);
let output = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--reporter-options') output = args[++i].replace(/^output=/, '');
}
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
const lines = [];
let failures = 0;
for (const file of fs.readdirSync('test').filter((f) => f.endsWith('.test.js')).sort()) {
  const tests = require(path.resolve('test', file));
  for (const [name, fn] of Object.entries(tests)) {
    let failure = '';
    try { fn(); } catch (e) { failure = `<failure>${esc(e.message)}</failure>`; failures++; }
    lines.push(`<testcase classname="${esc(file)}" name="${esc(name)}" file="${esc(path.resolve('test', file))}">` +
      `${failure}</testcase>`);
  }
}
const xml = `<testsuite name="Mocha Tests" tests="${lines.length}" failures="${failures}">\n` +
  lines.join('\n') + '\n</testsuite>\n';
if (output) fs.writeFileSync(output, xml); else process.stdout.write(xml);
process.exit(failures ? 1 : 0);
"""
OLD_TEST = """const assert = require('assert'), clamp = require('../lib/clamp');
module.exports = { 'below': () => assert.strictEqual(clamp(-1, 0, 5), 0) };
"""
NEW_TEST = OLD_TEST.replace("0) };", "0),\n  'above': () => assert.strictEqual(clamp(9, 0, 5), 5) };")


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=60, env={**env, **_path()})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _path() -> dict[str, str]:
    import os

    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}


def _write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")


def _synthetic_fork(mirrors: Path) -> None:
    """BugsJS's layout: Bug-1 and, each a single commit on top of it, Bug-1-test, Bug-1-fix and Bug-1-full."""
    repo = mirrors / "acme+toy" / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    manifest = json.dumps({"name": "toy", "version": "1.0.0", "private": True}) + "\n"
    _write(repo, {"package.json": manifest, "run-tests.js": RUNNER_JS, "lib/clamp.js": BUGGY_JS})
    _write(repo, {"test/clamp.test.js": OLD_TEST})
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "buggy")
    _git(repo, "tag", "Bug-1")
    for tag, files in (
        ("Bug-1-test", {"test/clamp.test.js": NEW_TEST}),
        ("Bug-1-fix", {"lib/clamp.js": FIXED_JS}),
        ("Bug-1-full", {"test/clamp.test.js": NEW_TEST, "lib/clamp.js": FIXED_JS}),
    ):
        _git(repo, "checkout", "-q", "--detach", "Bug-1")
        _write(repo, files)
        _git(repo, "commit", "-qam", tag)
        _git(repo, "tag", tag)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="node/npm not installed")
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_synthetic_bug_is_built_materialized_reported_and_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = {"repo": "acme/toy", "runner": ["run-tests.js"], "scope": "suite", "suite": [], "test_files": "^test/"}
    # the runner script is started by node: argv[0] is "node", the reporter options go after the script
    project["runner"] = ["node", "run-tests.js"]
    monkeypatch.setitem(jsbugs.PROJECTS, "Toy", project)
    monkeypatch.setattr(jsbugs, "with_reporter", lambda cmd, out: [*cmd, "--reporter-options", f"output={out}"])
    mirrors, cache = tmp_path / "mirrors", tmp_path / "cache"
    _synthetic_fork(mirrors)
    jsbugs.set_mirror_dir(mirrors)
    try:
        outcome = jsbugs.build_task("Toy-1", cache=cache)
        assert outcome.task is not None, outcome.reason
        task = task_from_data(json.loads(outcome.task.to_json()))
        assert [t["name"] for t in task.f2p] == ["above"] and [t["name"] for t in task.p2p] == ["below"]
        assert task.f2p[0]["file"] == "test/clamp.test.js" and task.fix_paths == ("lib/clamp.js",)
        assert task.test_cmd == ("node", "run-tests.js") and task.install["flags"][0] == "--ignore-scripts"
        assert (cache / "jsbugs" / "Toy-1" / ".complete").exists()

        dest = task.materialize(tmp_path / "work" / "repo", cache=cache)
        assert (dest / "test/clamp.test.js").read_text() == NEW_TEST
        assert _git(dest, "status", "--porcelain") == ""  # a clean tree of one commit
        report = task.ci_report(dest)
        assert report == tmp_path / "work" / "junit-Toy-1.xml"
        assert "<failure>" in report.read_text()

        (dest / "lib/clamp.js").write_text(FIXED_OTHER_LAYOUT)  # the developers' fix, written another way
        verdict = task.judge(dest, cache=cache)
        assert verdict["resolved"] and verdict["same_syntax"], verdict
        assert verdict["edited_files"] == ["lib/clamp.js"] and "return high" in verdict["diff"]

        other = task.materialize(tmp_path / "other" / "repo", cache=cache)
        (other / "lib/clamp.js").write_text(BUGGY_JS.replace("if (x > high) return low;", "if (x > high) x = high;"))
        verdict = task.judge(other, cache=cache)
        assert verdict["resolved"] and not verdict["same_syntax"]

        assert jsbugs.check_task(task, tmp_path / "check", cache=cache)["ok"]

        # The heal path, with the product's heal replaced by one that returns the developers' fix.
        seen = {}

        def fake_heal(request: object) -> SimpleNamespace:
            seen["request"] = request
            report = SimpleNamespace(
                stop_reason=SimpleNamespace(value="healed"),
                exit_code=0,
                confidence=SimpleNamespace(level="high", reasons=()),
                review=None,
                usage=SimpleNamespace(calls=2, tokens=300),
            )
            return SimpleNamespace(report=report, result=SimpleNamespace(files={"lib/clamp.js": FIXED_JS}))

        monkeypatch.setattr(jsbugs, "heal_with", fake_heal)
        monkeypatch.setattr(jsbugs, "CACHE_DIR", cache)
        record = jsbugs.heal_task(task, EngineChoice(), tmp_path / "heal", cache=cache)
        request = seen["request"]
        assert request.test_cmd == task.test_cmd  # type: ignore[attr-defined]
        assert request.junit == (tmp_path / "heal" / "junit-Toy-1.xml",)  # type: ignore[attr-defined]
        assert record["resolved"] and record["same_syntax"] and record["confidence"] == "high"
        assert record["calls"] == 2 and "return high" in record["diff"]
    finally:
        jsbugs.set_mirror_dir(None)


def test_the_committed_tasks_are_twenty_bugsjs_bugs_with_relative_paths() -> None:
    folder = Path(__file__).resolve().parents[2] / "bench" / "jsbugs" / "tasks"
    tasks = jsbugs.load_tasks(folder)
    assert len(tasks) == 20
    by_project: dict[str, int] = {}
    for task in tasks:
        by_project[task.project] = by_project.get(task.project, 0) + 1
        assert task.f2p and task.repo == jsbugs.PROJECTS[task.project]["repo"]
        assert set(task.commits) == {"buggy", "test", "fix", "full"}
        assert all(not p.startswith("/") for p in (*task.test_cmd, *task.fix_paths, *task.test_paths))
        assert all(t["file"] is None or not t["file"].startswith("/") for t in (*task.f2p, *task.p2p))
        assert not any(arg in ("-R", "--reporter") for arg in task.test_cmd)
    assert by_project == {"Hessian.js": 7, "Hexo": 6, "ESLint": 5, "Pencilblue": 2}
