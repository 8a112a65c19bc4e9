"""JavaScript and TypeScript read with tree-sitter: functions named as a reader names them, syntax problems
with their line, comments and layout left out of a program's identity, a test found by its titles, functions
routed through the behaviour probe's hook on their own lines."""

from __future__ import annotations

from selfix_action.repair.languages import (
    PROBE_HOOK,
    function_spans,
    has_node_test,
    instrument_node_calls,
    is_node_file,
    node_names_in_test,
    node_outline,
    node_test_lines,
    normalized_syntax,
    syntax_problem,
)

MODULE = """'use strict';
const util = require('util');
function add(a, b) {
  const c = a + b;
  return c;
}
class Shape {
  constructor(x) { this.x = x; }
  area() {
    return this.x * helper(2);
  }
}
Encoder.prototype.write = function (v) {
  if (v) { return '}'; }
  return [1, 2].map((x) => x * 2);
};
exports.decode = function decode(buf) { return buf; };
module.exports = { pick: function (o) { return o.k; }, arrow: (y) => `${y}}` };
"""


def test_functions_are_named_as_the_code_names_them_with_their_statement_lines() -> None:
    spans = {span.name: span for span in function_spans("lib/a.js", MODULE)}
    assert set(spans) == {"add", "Shape.constructor", "Shape.area", "Encoder.write", "decode", "pick", "arrow"}
    assert (spans["add"].start, spans["add"].end, sorted(spans["add"].statement_lines)) == (3, 6, [4, 5])
    assert "helper" in spans["Shape.area"].called_names
    # a brace inside a string or a template does not end a function
    assert (spans["Encoder.write"].start, spans["Encoder.write"].end) == (13, 16)


def test_python_is_still_read_with_ast() -> None:
    spans = function_spans("m.py", "class A:\n    def f(self):\n        return 1\n")
    assert [(s.name, s.start, s.end) for s in spans] == [("A.f", 2, 3)]
    assert not is_node_file("m.py") and is_node_file("a.ts") and is_node_file("a.mjs")


def test_a_syntax_problem_says_where_and_typescript_parses_with_its_grammar() -> None:
    assert syntax_problem("a.js", MODULE) is None
    assert syntax_problem("a.js", "function f( {\n  return 1;\n") is not None
    assert syntax_problem("a.ts", "const x: number = 1;\nfunction h(a: string): void {}\n") is None
    assert syntax_problem("a.js", "const x: number = 1;\n") is not None  # type annotations are not JavaScript
    assert syntax_problem("a.py", "def f(:\n") is not None


def test_comments_and_layout_are_not_part_of_a_programs_identity() -> None:
    assert normalized_syntax("a.js", "a + b; // sum") == normalized_syntax("a.js", "a  +  b;")
    assert normalized_syntax("a.js", "a + b;") != normalized_syntax("a.js", "a - b;")
    assert normalized_syntax("a.js", "a + (;") is None


SPEC = """const assert = require('assert');
const { parse } = require('../lib/parse');
describe('parser', function () {
  beforeEach(function () { this.x = 1; });
  describe('numbers', function () {
    it('reads 1', function () {
      assert.equal(parse('1'), 1);
    });
  });
  it('reads 1', function () { assert.ok(true); });
});
"""


def test_a_test_is_found_by_its_titles_with_the_hooks_around_it() -> None:
    lines = node_test_lines("t.test.js", SPEC, ("parser", "numbers", "reads 1"))
    assert {6, 7, 8} <= lines and 4 in lines and 10 not in lines
    assert node_test_lines("t.test.js", SPEC, ("parser", "reads 1")) >= {10}
    assert node_test_lines("t.test.js", SPEC, ("parser", "nothing")) == set()
    assert "parse" in node_names_in_test("t.test.js", SPEC, ("parser", "numbers", "reads 1"))
    assert node_outline("t.test.js", SPEC) == {1, 2}
    assert has_node_test("t.test.js", SPEC) and not has_node_test("t.js", "describe('x', () => {});")
    # ESLint's RuleTester declares a mocha test per case (readers' QA tests were refused for it)
    rule_spec = "const ruleTester = new RuleTester();\nruleTester.run('no-x', rule, { valid: ['a'], invalid: [] });\n"
    assert has_node_test("t.js", rule_spec) and has_node_test("t.js", "new RuleTester().run('x', r, {});\n")
    assert not has_node_test("t.js", "runner.run('x');\n")


def test_a_data_driven_case_is_found_by_its_code_when_no_it_call_names_it() -> None:
    """ESLint's RuleTester titles each case by its code: the case's object literal is the test's lines."""
    spec = (
        "ruleTester.run('semi', rule, {\n"
        "    valid: ['var x = 5;'],\n"
        "    invalid: [\n"
        "        {\n"
        '            code: "a;\\n++b",\n'
        "            options: ['never'],\n"
        "        }\n"
        "    ]\n"
        "});\n"
    )
    assert node_test_lines("tests/lib/rules/semi.js", spec, ("semi", "invalid", "a;\n++b")) == {4, 5, 6, 7}
    assert node_test_lines("tests/lib/rules/semi.js", spec, ("semi", "valid", "var x = 5;")) == {2}


def test_a_case_whose_code_is_an_array_of_lines_joined_is_found_by_its_title() -> None:
    """ESLint writes a multi-line case as ``[...].join("\\n")`` (ESLint-116, no-loop-func); a JUnit name carries
    its newlines as spaces."""
    spec = (
        "ruleTester.run('no-loop-func', rule, {\n"
        "    valid: [\n"
        "        {\n"
        "            code: [\n"
        '                "while (true) {",\n'
        '                "    (function() { a; });",\n'
        '                "}",\n'
        '                "let a;"\n'
        '            ].join("\\n"),\n'
        "            parserOptions: { ecmaVersion: 6 }\n"
        "        }\n"
        "    ],\n"
        "    invalid: []\n"
        "});\n"
    )
    code = "while (true) {\n    (function() { a; });\n}\nlet a;"
    case = set(range(3, 12))
    assert node_test_lines("tests/lib/rules/no-loop-func.js", spec, ("no-loop-func", "valid", code)) == case
    as_junit_names_it = "while (true) {     (function() { a; }); } let a;"
    assert (
        node_test_lines("tests/lib/rules/no-loop-func.js", spec, ("no-loop-func", "valid", as_junit_names_it)) == case
    )
    assert node_test_lines("tests/lib/rules/no-loop-func.js", spec, ("no-loop-func", "valid", "let a;")) == set()


def test_a_required_spec_file_matches_the_inner_titles() -> None:
    """Hexo's test/index.js requires the others: a file's own describe blocks are the inner titles."""
    spec = "describe('toc', function () {\n  it('default', function () {\n    toc(html);\n  });\n});\n"
    assert node_test_lines("test/scripts/helpers/toc.js", spec, ("Hexo", "Helpers", "toc", "default")) == {2, 3, 4}


def test_functions_are_routed_through_the_probes_hook_on_their_own_lines() -> None:
    """The behaviour probe watches a function by its text: the body becomes an inner function of the same
    parameters, called through the hook, on the same lines (stack traces and coverage keep their places); what
    cannot be routed so says why and is left as it was."""
    source = MODULE + (
        "class Sub extends Shape {\n  area() { return super.area(); }\n  *walk() { yield 1; }\n}\n"
        "const scale = ({ k }) => k;\nfunction multi(a,\n    b) {\n  return a * b;\n}\n"
    )
    names = ["add", "Encoder.write", "Shape.area", "Shape.constructor", "arrow", "Sub.area", "Sub.walk", "scale",
             "multi", "gone"]  # fmt: skip
    routed, skipped = instrument_node_calls("lib/a.js", source, [(f"lib/a.js:{n}", n, 1) for n in names])
    assert skipped == {
        "lib/a.js:Shape.constructor": "a constructor",
        "lib/a.js:Sub.area": "its body uses super",
        "lib/a.js:Sub.walk": "a generator",
        "lib/a.js:scale": "an arrow function whose parameters are not plain names",
        "lib/a.js:gone": "not found in this version",
    }
    assert routed.count("\n") == source.count("\n")
    assert syntax_problem("lib/a.js", routed) is None
    lines = routed.splitlines()
    assert lines[2] == f'function add(a, b) {{ return {PROBE_HOOK}("lib/a.js:add", this, arguments, function (a, b) {{'
    assert lines[5] == "}, typeof globalThis === 'object' ? globalThis : undefined); }"
    assert lines[6] == source.splitlines()[6]
    assert '("lib/a.js:arrow", undefined, [y], (y) => `${y}}`, typeof globalThis' in routed
    assert '("lib/a.js:multi", this, arguments, function (a, b) {' in routed  # one line, as the original's first
    # TypeScript: the hook read through Reflect.get and the inner function's this typed, for a type-checker
    typed, _ = instrument_node_calls("src/m.ts", "export function f(n: number): number {\n  return n;\n}\n",
                                     [("src/m.ts:f", "f", 1)])  # fmt: skip
    assert "Reflect.get(Reflect.get(globalThis, 'process')" in typed and "function (this: any, n: number) {" in typed
    assert syntax_problem("src/m.ts", typed) is None
    # a watched function inside another (a rule's create and its visitor) composes
    rule = "module.exports = {\n  create(context) {\n"
    rule += "    return { Identifier(node) { context.report(node); } };\n  },\n};\n"
    wanted = [("r:create", "create", 2), ("r:visit", "create.Identifier", 3)]
    nested, none_skipped = instrument_node_calls("lib/rule.js", rule, wanted)
    assert none_skipped == {} and syntax_problem("lib/rule.js", nested) is None
    assert nested.count("\n") == rule.count("\n") and nested.count("__selfixCall") == 2
    assert nested.splitlines()[3].startswith("  }, typeof globalThis")
    # untouched where nothing was asked
    assert instrument_node_calls("lib/a.js", source, []) == (source, {})
