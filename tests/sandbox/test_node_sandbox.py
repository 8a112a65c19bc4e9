"""The Node sandbox's own parts: node's test runner run for real in the sandbox (no install needed), V8's block
ranges read as lines, the runner command made local, the runner's reporters replaced by selfix's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from selfix_action.errors import InputError, SandboxError
from selfix_action.repair.reported import ReportedTest, resolve_reported
from selfix_action.repair.values import CandidateCheck, TestStatus
from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.node_sandbox import NodeSandbox, covered_lines, runner_command
from selfix_action.toolchains.node import NodeProject
from tests.helpers.node_projects import write

NODE = NodeProject("npm", "node", "node --test test/")
SOURCE = "export function add(a, b) {\n  return a - b;\n}\n"
SPEC = (
    "import { describe, it } from 'node:test';\nimport assert from 'node:assert';\n"
    "import { add } from '../src/math.mjs';\n"
    "describe('math', () => {\n  it('adds', () => { assert.strictEqual(add(1, 2), 3); });\n"
    "  it('adds zero', () => { assert.strictEqual(add(0, 0), 0); });\n});\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    return write(
        tmp_path / "p",
        {"package.json": json.dumps({"scripts": {"test": "node --test test/"}}), "src/math.mjs": SOURCE,
         "test/math.test.mjs": SPEC},
    )  # fmt: skip


def test_node_runs_name_tests_by_file_and_titles_and_select_one_alone(project: Path, isolation: Isolation) -> None:
    with NodeSandbox(project, ["node", "--test", "test/"], NODE, isolation=isolation) as sandbox:
        run = sandbox.run_tests(None)
        assert {n: r.status for n, r in run.results.items()} == {
            "test/math.test.mjs::math > adds": TestStatus.FAILED,
            "test/math.test.mjs::math > adds zero": TestStatus.PASSED,
        }
        failed = run.results["test/math.test.mjs::math > adds"]
        assert failed.exc_type == "AssertionError" and "-1 !== 3" in failed.message
        assert ("test/math.test.mjs", 5) in {(f.file, f.line) for f in failed.frames}
        covered = sandbox.run_tests(None, coverage=True)
        assert covered.coverage is not None and covered.coverage_collector == "v8"
        assert covered.coverage["test/math.test.mjs::math > adds"]["src/math.mjs"] == [1, 2, 3]
        alone = sandbox.run_tests(["test/math.test.mjs::math > adds zero"])
        assert list(alone.results) == ["test/math.test.mjs::math > adds zero"]
        assert sandbox.source_files() == ["src/math.mjs"]
        assert sandbox.toolchain.startswith("node's test runner on Node v")
        fixed = SOURCE.replace("a - b", "a + b")
        good, broken = sandbox.check_candidates(
            [
                CandidateCheck(files={"src/math.mjs": fixed}, nodeids=("test/math.test.mjs::math > adds",)),
                CandidateCheck(files={"src/math.mjs": fixed + "}"}, nodeids=("test/math.test.mjs::math > adds",)),
            ]
        )
        assert good.results["test/math.test.mjs::math > adds"].status is TestStatus.PASSED
        assert not broken.results and broken.error
        qa = "_selfix_qa/test/selfix-qa-1.test.mjs"
        source = "import { it } from 'node:test';\nimport assert from 'node:assert';\n"
        source += "import { add } from '../src/math.mjs';\nit('q', () => { assert.strictEqual(add(2, 2), 4); });\n"
        exposed = sandbox.run_tests([qa], extra_test_files={qa: source})
        assert {n: r.status for n, r in exposed.results.items()} == {f"{qa}::q": TestStatus.FAILED}
        assert not (sandbox.root / "test" / "selfix-qa-1.test.mjs").exists()  # written for the run only
    assert (project / "src" / "math.mjs").read_text() == SOURCE


def test_a_qa_test_never_replaces_a_file_of_the_project(project: Path) -> None:
    qa = "_selfix_qa/test/math.test.mjs"
    with NodeSandbox(project, ["node", "--test", "test/"], NODE) as sandbox:
        with pytest.raises(SandboxError, match="would replace a file of the project"):
            sandbox.run_tests([qa], extra_test_files={qa: ""})
        assert sandbox.read_file("test/math.test.mjs") == SPEC


def test_a_reported_case_resolves_by_its_full_title_and_the_file_narrows_it() -> None:
    collected = ["test/a.test.js::math > adds", "test/b.test.js::math > adds", "test/a.test.js::other"]
    named = ReportedTest("", "adds", "/home/runner/work/x/x/test/b.test.js", full_title="math adds")
    resolved = resolve_reported([named, ReportedTest("", "math adds", None, full_title="math adds")], collected)
    assert resolved.nodeids == ("test/b.test.js::math > adds",)
    assert "ambiguous: 2 tests" in resolved.missing()[0]
    # XML reads a newline in an attribute back as a space (ESLint's rule tests are titled by their code)
    eslint = ["tests/lib/rules/semi.js::semi > invalid > a;\n++b"]
    assert resolve_reported([ReportedTest("", "a; ++b", None, full_title="semi invalid a; ++b")], eslint).nodeids == (
        eslint[0],
    )


def test_v8_block_ranges_read_as_the_lines_that_ran() -> None:
    text = "function add(a, b) {\n  if (a > 100) {\n    return a;\n  }\n  return a - b;\n}\n"
    start_if = text.index("{\n    return a")
    assert covered_lines(text, [[0, len(text) - 1, 1], [start_if, text.index("  return a -"), 0]]) == [1, 2, 5, 6]


def test_the_runner_is_called_from_the_projects_node_modules_and_its_reporters_are_dropped(tmp_path: Path) -> None:
    bin_dir = tmp_path / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "mocha").write_text("")
    command = runner_command(["npx", "mocha", "-R", "spec", "--reporter-options", "x=1", "test/"], tmp_path, "mocha")
    assert command == [str(bin_dir / "mocha"), "test/"]
    with pytest.raises(InputError, match="jest is not installed in the project"):
        runner_command(["npx", "jest"], tmp_path, "jest")


def test_files_asked_for_replace_the_commands_own_spec_files_but_not_option_values(tmp_path: Path) -> None:
    from selfix_action.sandbox.node_sandbox import _without_spec_files

    write(tmp_path, {"test/a.test.js": "", "test/setup.js": ""})
    command = ["mocha", "-t", "15000", "-r", "test/setup.js", "test/*.test.js", "--spec", "test/a.test.js"]
    assert _without_spec_files(command, tmp_path) == ["mocha", "-t", "15000", "-r", "test/setup.js"]


def test_a_workspace_package_finds_the_dependencies_hoisted_to_the_workspace_root(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    root = write(
        tmp_path / "mono",
        {
            "package.json": json.dumps({"private": True, "workspaces": ["packages/*"]}),
            "node_modules/pad/index.js": "module.exports = (s) => ' ' + s;\n",
            "packages/x/package.json": json.dumps({"name": "x", "scripts": {"test": "node --test test/"}}),
            "packages/x/test/pad.test.js": "const { test } = require('node:test');\n"
            "const assert = require('node:assert');\nconst pad = require('pad');\n"
            "test('pads', () => { assert.strictEqual(pad('a'), ' a'); });\n",
        },
    )
    (root / ".git").mkdir()
    with NodeSandbox(root / "packages" / "x", ["node", "--test", "test/"], NODE) as sandbox:
        run = sandbox.run_tests(None)
    assert {n: r.status for n, r in run.results.items()} == {"test/pad.test.js::pads": TestStatus.PASSED}


@pytest.mark.slow
def test_mochas_whole_suite_with_a_qa_test_runs_both(tmp_path: Path) -> None:
    """A confirmation run: the command's own spec files and the QA test beside them (a file asked for alone runs
    without the command's specs; the whole suite must not lose them)."""
    from tests.helpers.node_projects import install_into

    repo = write(
        tmp_path / "p",
        {"package.json": json.dumps({"scripts": {"test": "mocha test/*.spec.js"}, "devDependencies": {"mocha": "*"}}),
         "test/a.spec.js": "const assert = require('assert');\nit('a', () => assert.ok(true));\n"},
    )  # fmt: skip
    install_into(repo)
    project = NodeProject("npm", "mocha", "mocha test/*.spec.js")
    qa = "_selfix_qa/test/selfix-qa-1.test.js"
    source = "const assert = require('assert');\nit('q', () => assert.ok(true));\n"
    with NodeSandbox(repo, ["node_modules/.bin/mocha", "test/*.spec.js"], project) as sandbox:
        whole = sandbox.run_tests(None, extra_test_files={qa: source})
        alone = sandbox.run_tests([qa], extra_test_files={qa: source})
    assert set(whole.results) == {"test/a.spec.js::a", f"{qa}::q"}
    assert set(alone.results) == {f"{qa}::q"}


def _installed(tmp_path: Path, runner: str, script: str, files: dict[str, str]) -> Path:
    """A project of ``files`` whose test script is ``script``, with ``runner`` installed (the workflow's npm ci,
    from the tests' cache)."""
    from tests.helpers.node_projects import install_into

    manifest = {"name": "p", "scripts": {"test": script}, "devDependencies": {runner: "*"}}
    repo = write(tmp_path / "p", {"package.json": json.dumps(manifest), **files})
    install_into(repo)
    return repo


ENCODER = """'use strict';
function Encoder() {
  this.out = [];
}
Encoder.prototype.writeMap = function (map) {
  if (map instanceof Map) {
    map.forEach((v, k) => this.out.push(k + '=' + v));
  }
  return this;
};
Encoder.prototype.writeAll = async function (maps) {
  if (!maps.length) throw new TypeError('nothing to write');
  return maps.length;
};
module.exports = Encoder;
"""
ENCODER_SPEC = """const assert = require('assert');
const Encoder = require('../lib/encoder');
describe('writeMap', () => {
  it('writes a plain object', () => {
    assert.deepStrictEqual(new Encoder().writeMap({ a: 1 }).out, ['a=1']);
  });
  it('writes a Map', () => {
    assert.deepStrictEqual(new Encoder().writeMap(new Map([['b', 2]])).out, ['b=2']);
  });
  it('writes all', async () => {
    assert.strictEqual(await new Encoder().writeAll([1, 2]), 2);
    await assert.rejects(new Encoder().writeAll([]), TypeError);
  });
});
"""


@pytest.mark.slow
def test_the_behaviour_probe_watches_mochas_calls_in_each_version_and_a_partial_fix_shows(tmp_path: Path) -> None:
    """Hessian.js-7's kind: a patch that handles the failing input ({a: 1}) and not its siblings. The edited
    function, watched in place while the tests run on each version, answers the recorded inputs and their
    variations; the complete second solution disagrees with the partial patch on a sibling (an object of another
    key), and the unpatched code's two runs agree with each other."""
    from selfix_action.repair.differential import behaviour_evidence, probe_targets

    repo = _installed(
        tmp_path, "mocha", "mocha test/", {"lib/encoder.js": ENCODER, "test/encoder.spec.js": ENCODER_SPEC}
    )
    partial = ENCODER.replace(
        "  if (map instanceof Map) {", "  if (map.a) this.out.push('a=' + map.a);\n  if (map instanceof Map) {"
    )
    complete = ENCODER.replace(
        "  if (map instanceof Map) {",
        "  if (!(map instanceof Map)) map = new Map(Object.entries(map || {}));\n  if (map instanceof Map) {",
    )
    failing = "test/encoder.spec.js::writeMap > writes a plain object"
    passing = ["test/encoder.spec.js::writeMap > writes a Map", "test/encoder.spec.js::writeMap > writes all"]
    originals = {"lib/encoder.js": ENCODER}
    patches = [{"lib/encoder.js": partial}, {"lib/encoder.js": complete}]
    targets = probe_targets(originals, patches)
    assert [t.qualname for t in targets] == ["Encoder.writeMap"]
    project = NodeProject("npm", "mocha", "mocha test/")
    with NodeSandbox(repo, ["node_modules/.bin/mocha", "test/"], project) as sandbox:
        baseline = sandbox.run_tests(None)
        assert baseline.results[failing].status is TestStatus.FAILED
        every = (*targets, *probe_targets(originals, [{"lib/encoder.js": ENCODER.replace("maps.length;", "1;")}]))
        # the complete fix again, with a field its constructor adds: later calls on its objects still compare
        fielded = patches[1]["lib/encoder.js"].replace("this.out = [];", "this.out = [];\n  this.seen = {};")
        versions = {"patch": patches[0], "second": patches[1], "fielded": {"lib/encoder.js": fielded}}
        probe = sandbox.probe_calls(every, [failing, *passing], versions)
        assert sandbox.read_file("lib/encoder.js") == ENCODER  # the watched text was the runs' only
    assert list(probe.versions) == ["before", "before again", "patch", "second", "fielded"], probe.note
    assert probe.recorded == 4 and probe.processes == 5  # two inputs of writeMap, two of writeAll
    before = probe.versions["before"]
    recorded = {(line.test, line.text, line.outcome) for line in before if line.variation == "as recorded"}
    assert (failing, "({ a: 1 }) on Encoder { out: [] }", "returns this") in recorded
    async_outcomes = {line.outcome for line in probe.versions["before"] if "writeAll" in line.target}
    assert "returns 2" in async_outcomes and "raises TypeError: nothing to write" in async_outcomes
    evidence = behaviour_evidence(probe, {failing}, second="second", second_source="a second Patcher answer")
    assert evidence.unstable == 0 and evidence.compared > 10
    fixed = [c for c in evidence.changed if c.variation == "as recorded"]
    # what changed is the receiver's field (the argument is left as it was), with a digest of its whole state
    assert [c.test for c in fixed] == [failing]
    shape = r"returns this \| arguments after: this\.out: \[ 'a=1' \] #[0-9a-f]{12}"
    assert re.fullmatch(shape, fixed[0].after)
    assert not evidence.outside  # the passing tests' own calls behave as before
    # the sibling the partial patch misses: {b: 2}, the passing test's Map as a plain object
    sibling = [c for c in evidence.disagreements if c.variation == "argument 1 as a plain object"]
    assert [(c.input, c.before) for c in sibling] == [("({ b: 2 }) on Encoder { out: [] }", "returns this")]
    assert "this.out: [ 'b=2' ] #" in sibling[0].after
    same = behaviour_evidence(probe, {failing}, patch="second", second="fielded")
    assert same.compared == evidence.compared and not same.disagreements
    assert (repo / "lib" / "encoder.js").read_text() == ENCODER


IS_HOME = """'use strict';
function isHome() {
  if (this.path === '') return true;
  return /^page\\/\\d+\\//.test(this.path);
}
module.exports = { isHome: isHome };
"""
IS_HOME_SPEC = """const assert = require('assert');
const is = require('../lib/is');
describe('is', () => {
  it('home at index.html', () => { assert.strictEqual(is.isHome.call({ path: 'index.html', dir: 'page' }), true); });
  it('home on page 2', () => { assert.strictEqual(is.isHome.call({ path: 'page/2/', dir: 'page' }), true); });
});
"""


@pytest.mark.slow
def test_the_behaviour_probe_varies_a_context_receivers_fields(tmp_path: Path) -> None:
    """Hexo-3's kind: a helper whose input is its receiver (``this.path``). The receiver's plain fields are varied
    as strings (text after, before, empty...), and an unanchored match the second solution anchors shows."""
    from selfix_action.repair.differential import behaviour_evidence, probe_targets

    repo = _installed(tmp_path, "mocha", "mocha test/", {"lib/is.js": IS_HOME, "test/is.spec.js": IS_HOME_SPEC})
    partial = IS_HOME.replace("  if (this.path === '')", "  if (this.path.replace(/index\\.html$/, '') === '')")
    anchored = IS_HOME.replace("  if (this.path === '')", "  if (this.path === '' || this.path === 'index.html')")
    anchored = anchored.replace("\\d+\\//.test", "\\d+\\/(index\\.html)?$/.test")
    targets = probe_targets({"lib/is.js": IS_HOME}, [{"lib/is.js": partial}, {"lib/is.js": anchored}])
    failing = "test/is.spec.js::is > home at index.html"
    with NodeSandbox(repo, ["node_modules/.bin/mocha", "test/"], NodeProject("npm", "mocha", "mocha test/")) as sandbox:
        sandbox.run_tests(None)
        probe = sandbox.probe_calls(
            targets, [failing, "test/is.spec.js::is > home on page 2"], {"patch": {"lib/is.js": partial},
                                                                         "second": {"lib/is.js": anchored}}
        )  # fmt: skip
    evidence = behaviour_evidence(probe, {failing}, second="second")
    rows = {(c.variation, c.input.split(" in ", 1)[0], c.before, c.after) for c in evidence.disagreements}
    assert rows == {("this.path with text after", "this.path = 'page/2/x'", "returns true", "returns false")}, rows
    varied = {line.variation for line in probe.versions["before"]}
    assert "this.dir empty" in varied and not any("in an array" in v for v in varied)  # a field stays a string


ENCODER_TS = """export class Encoder {
  out: string[] = [];
  writeMap(map: any): this {
    if (map instanceof Map) {
      map.forEach((v: unknown, k: unknown) => this.out.push(k + '=' + v));
    }
    return this;
  }
}
"""
JEST_SPEC = """const Encoder = require('../lib/encoder');
describe('writeMap', () => {
  test('writes a plain object', () => { expect(new Encoder().writeMap({ a: 1 }).out).toEqual(['a=1']); });
  test('writes a Map', () => { expect(new Encoder().writeMap(new Map([['b', 2]])).out).toEqual(['b=2']); });
});
"""
VITEST_SPEC = """import { describe, it, expect } from 'vitest';
import { Encoder } from '../src/encoder';
describe('writeMap', () => {
  it('writes a plain object', () => { expect(new Encoder().writeMap({ a: 1 }).out).toEqual(['a=1']); });
  it('writes a Map', () => { expect(new Encoder().writeMap(new Map([['b', 2]])).out).toEqual(['b=2']); });
});
"""


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["jest"])  # vitest's probe: test_node_heal's vitest heal (one realm there)
def test_the_behaviour_probe_watches_jest_and_vitest_in_their_own_module_sandboxes(tmp_path: Path, runner: str) -> None:
    """jest and vitest run the project's modules in a context of their own (its globalThis, its Map): the hook
    reaches the recorder through ``process``, each call's test comes from the expect state, and what the recorder
    builds (a Map from a plain object) is of the code's own realm, so ``instanceof Map`` holds in the patch."""
    from selfix_action.repair.differential import behaviour_evidence, probe_targets

    if runner == "jest":
        source, path, spec_path, spec = ENCODER, "lib/encoder.js", "test/encoder.test.js", JEST_SPEC
        command, script = ["node_modules/.bin/jest"], "jest"
    else:
        source, path, spec_path, spec = ENCODER_TS, "src/encoder.ts", "test/encoder.test.ts", VITEST_SPEC
        command, script = ["node_modules/.bin/vitest", "run"], "vitest run"
    repo = _installed(tmp_path, runner, script, {path: source, spec_path: spec})
    guard = next(line for line in source.splitlines() if "if (map instanceof Map) {" in line)
    indent = guard[: len(guard) - len(guard.lstrip())]
    partial = source.replace(guard, f"{indent}if (map.a) this.out.push('a=' + map.a);\n{guard}")
    convert = "if (!(map instanceof Map)) map = new Map(Object.entries(map || {}));"
    complete = source.replace(guard, f"{indent}{convert}\n{guard}")
    targets = probe_targets({path: source}, [{path: partial}, {path: complete}])
    assert [t.qualname for t in targets] == ["Encoder.writeMap"]
    failing = f"{spec_path}::writeMap > writes a plain object"
    tests = [failing, f"{spec_path}::writeMap > writes a Map"]
    with NodeSandbox(repo, command, NodeProject("npm", runner, script)) as sandbox:
        assert sandbox.run_tests(None).results[failing].status is TestStatus.FAILED
        probe = sandbox.probe_calls(targets, tests, {"patch": {path: partial}, "second": {path: complete}})
    assert list(probe.versions) == ["before", "before again", "patch", "second"], probe.note
    recorded = {(line.test, line.text) for line in probe.versions["before"] if line.variation == "as recorded"}
    assert (failing, "({ a: 1 }) on Encoder { out: [] }") in recorded
    evidence = behaviour_evidence(probe, {failing}, second="second")
    assert [c.test for c in evidence.changed if c.variation == "as recorded"] == [failing]
    assert not evidence.outside and evidence.unstable == 0
    # a Map the recorder builds is of the code's realm: the unpatched code's ``instanceof Map`` holds and writes it
    as_map = [line.outcome for line in probe.versions["before"] if line.variation == "argument 1 as a Map"]
    assert as_map and all("this.out: [ 'a=1' ]" in outcome for outcome in as_map), as_map
    sibling = [c for c in evidence.disagreements if c.variation == "argument 1 as a plain object"]
    assert [(c.input, c.before) for c in sibling] == [("({ b: 2 }) on Encoder { out: [] }", "returns this")]


def test_a_title_with_a_line_separator_stays_one_test(tmp_path: Path) -> None:
    """ESLint titles its tests by their code, and code may hold U+2028: the reporter's JSON keeps it raw, and a
    record is cut at "\\n" only (str.splitlines would cut it there too, and the test would have no result)."""
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    spec = (
        "import { it } from 'node:test';\nimport assert from 'node:assert';\n"
        "it('foo \\u2028 bar', () => { assert.strictEqual(1, 2); });\nit('plain', () => {});\n"
    )
    repo = write(tmp_path / "p", {"package.json": json.dumps({"scripts": {"test": "node --test test/"}}),
                                  "test/a.test.mjs": spec})  # fmt: skip
    with NodeSandbox(repo, ["node", "--test", "test/"], NODE) as sandbox:
        run = sandbox.run_tests(None)
    assert {n: r.status for n, r in run.results.items()} == {
        "test/a.test.mjs::foo \u2028 bar": TestStatus.FAILED,
        "test/a.test.mjs::plain": TestStatus.PASSED,
    }


def test_covered_lines_count_lines_by_newlines_alone() -> None:
    text = "a;\n'\u2028';\nb;\n"  # a line separator inside a string literal is no new line
    starts = [text.index("a"), text.index("'"), text.index("b")]
    assert covered_lines(text, [[0, len(text), 0], [starts[2], starts[2] + 2, 1]]) == [3]
