"""What the pure core needs to know of a source file's language: which language a path holds, its functions
(localization groups suspicious lines by them, the engines show them whole) and whether a text still parses.

Python is read with ``ast``; JavaScript and TypeScript with tree-sitter's grammars (a real parser, never
regular expressions: a ``}`` in a template string or a regex literal does not end a function). Pure: texts in,
values out.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import Any

JS_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".jsx"})
TS_SUFFIXES = frozenset({".ts", ".mts", ".cts", ".tsx"})
NODE_SUFFIXES = JS_SUFFIXES | TS_SUFFIXES


def is_node_file(path: str) -> bool:
    return PurePosixPath(path).suffix in NODE_SUFFIXES


@dataclass(frozen=True)
class FunctionSpan:
    file: str
    name: str  # qualified: Class.method
    start: int
    end: int
    statement_lines: frozenset[int]
    called_names: frozenset[str]


def function_spans(file: str, source: str) -> list[FunctionSpan]:
    """Every function and method in ``source`` with its statement lines, outer before inner; [] when the text
    does not parse or the language is not one selfix reads."""
    if is_node_file(file):
        return _node_spans(file, source)
    return _python_spans(file, source)


def syntax_problem(path: str, text: str) -> str | None:
    """Why ``text`` no longer parses as ``path``'s language ("line 3: ..."), None when it parses (or the
    language is not one selfix reads)."""
    if path.endswith(".py"):
        try:
            ast.parse(text)
        except SyntaxError as exc:
            return f"{exc.msg} at line {exc.lineno}"
        except ValueError as exc:
            return str(exc)
        return None
    if not is_node_file(path):
        return None
    tree = _parse(path, text)
    if not tree.root_node.has_error:
        return None
    bad = next(_errors(tree.root_node), None)
    if bad is None:
        return "does not parse"
    line = bad.start_point[0] + 1
    what = f"missing {bad.type}" if bad.is_missing else "unexpected text"
    return f"{what} at line {line}"


def normalized_syntax(path: str, text: str) -> str | None:
    """The syntax tree as text with comments and layout left out (two edits that differ only there are one
    program); None when it does not parse."""
    if path.endswith(".py"):
        try:
            return ast.dump(ast.parse(text))
        except (SyntaxError, ValueError):
            return None
    if not is_node_file(path):
        return None
    tree = _parse(path, text)
    if tree.root_node.has_error:
        return None
    parts: list[str] = []
    _flatten(tree.root_node, parts)
    return " ".join(parts)


# -- Python ------------------------------------------------------------------------------------------------
def _python_spans(file: str, source: str) -> list[FunctionSpan]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    spans: list[FunctionSpan] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                lines = {n.lineno for stmt in child.body for n in ast.walk(stmt) if isinstance(n, ast.stmt)}
                called = set()
                for n in ast.walk(child):
                    if isinstance(n, ast.Call):
                        func = n.func
                        if isinstance(func, ast.Name):
                            called.add(func.id)
                        elif isinstance(func, ast.Attribute):
                            called.add(func.attr)
                    elif isinstance(n, ast.Name):
                        called.add(n.id)  # classes instantiated or functions passed around
                end = child.end_lineno or child.lineno
                spans.append(FunctionSpan(file, name, child.lineno, end, frozenset(lines), frozenset(called)))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return spans


# -- JavaScript and TypeScript (tree-sitter) ---------------------------------------------------------------
_FUNCTION_TYPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "function",  # older grammars' name for a function expression
        "generator_function",
        "arrow_function",
        "method_definition",
    }
)
_CLASS_TYPES = frozenset({"class_declaration", "class", "abstract_class_declaration"})
_STATEMENT_SUFFIXES = ("_statement", "_declaration")


@cache
def _parser(grammar: str) -> Any:
    # Imported here: a Python-only heal never loads the grammars.
    import tree_sitter

    if grammar == "tsx":
        import tree_sitter_typescript

        language = tree_sitter.Language(tree_sitter_typescript.language_tsx())
    elif grammar == "typescript":
        import tree_sitter_typescript

        language = tree_sitter.Language(tree_sitter_typescript.language_typescript())
    else:
        import tree_sitter_javascript

        language = tree_sitter.Language(tree_sitter_javascript.language())
    return tree_sitter.Parser(language)


def _parse(path: str, text: str) -> Any:
    suffix = PurePosixPath(path).suffix
    grammar = "tsx" if suffix == ".tsx" else "typescript" if suffix in TS_SUFFIXES else "javascript"
    return _parser(grammar).parse(text.encode("utf-8"))


def _errors(node: Any) -> Iterator[Any]:
    if node.type == "ERROR" or node.is_missing:
        yield node
        return
    for child in node.children:
        if child.has_error or child.is_missing:
            yield from _errors(child)


def _flatten(node: Any, parts: list[str]) -> None:
    if node.type == "comment":
        return
    if node.child_count == 0:
        parts.append(node.text.decode("utf-8", "replace"))
        return
    parts.append(f"({node.type}")
    for child in node.children:
        _flatten(child, parts)
    parts.append(")")


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", "replace"))


def _function_name(node: Any) -> str:
    """The name a function is known by: its own, the variable, property or member it is assigned to, the
    object key it sits under; "" for an anonymous callback."""
    named = node.child_by_field_name("name")
    if named is not None and node.type != "function_expression":
        return _text(named)
    parent = node.parent
    if parent is None:
        return _text(named) if named is not None else ""
    if parent.type == "variable_declarator":
        target = parent.child_by_field_name("name")
        return _text(target) if target is not None else ""
    if parent.type in ("assignment_expression", "augmented_assignment_expression"):
        target = parent.child_by_field_name("left")
        if target is None:
            return ""
        # ``Foo.prototype.bar = function`` is Foo's method bar; ``module.exports.x =`` / ``exports.x =`` is x.
        name = _text(target).replace(".prototype.", ".")
        for prefix in ("module.exports.", "exports."):
            name = name.removeprefix(prefix)
        return name
    if parent.type == "pair":
        key = parent.child_by_field_name("key")
        return _text(key).strip("'\"") if key is not None else ""
    if parent.type in ("public_field_definition", "field_definition"):
        key = parent.child_by_field_name("name") or parent.child_by_field_name("property")
        return _text(key) if key is not None else ""
    return _text(named) if named is not None else ""


def _named_functions(root: Any) -> Iterator[tuple[Any, str]]:
    """Every named function node under ``root`` with its qualified name (``Class.method``, ``outer.inner``),
    outer before inner: the names localization, slices and the behaviour probe share."""

    def visit(node: Any, prefix: str) -> Iterator[tuple[Any, str]]:
        for child in node.children:
            if child.type in _CLASS_TYPES:
                name = child.child_by_field_name("name")
                yield from visit(child, f"{prefix}{_text(name)}." if name is not None else prefix)
            elif child.type in _FUNCTION_TYPES and (name := _function_name(child)):
                qualified = name if "." in name else f"{prefix}{name}"
                yield child, qualified
                yield from visit(child, qualified + ".")
            else:
                yield from visit(child, prefix)

    return visit(root, "")


def _node_spans(file: str, source: str) -> list[FunctionSpan]:
    tree = _parse(file, source)
    spans: list[FunctionSpan] = []
    for child, qualified in _named_functions(tree.root_node):
        body = child.child_by_field_name("body")
        lines: set[int] = set()
        called: set[str] = set()
        if body is not None:
            _statements(body, lines, called)
        start, end = child.start_point[0] + 1, child.end_point[0] + 1
        if body is not None and body.type != "statement_block":  # ``x => expr``: the expression
            lines.add(body.start_point[0] + 1)
        spans.append(FunctionSpan(file, qualified, start, end, frozenset(lines), frozenset(called)))
    spans.sort(key=lambda span: (span.start, -span.end))
    return spans


# -- the behaviour probe's recording, in the function's own text ---------------------------------------------
# What an instrumented function calls: selfix's recorder when the test process loaded it (node_plugin/
# selfix_calls.js, through NODE_OPTIONS), else the function's own body unchanged. The recorder hangs on
# ``process``, which jest's and vitest's module sandboxes share with the process (their globalThis is their own);
# the caller's globalThis goes with each call, for the test that made it. TypeScript reads it through
# ``Reflect.get`` and types what it adds, so a type-checking transform (ts-jest) accepts the text.
PROBE_HOOK = "(typeof process === 'object' && process.__selfixCall || function (i, t, a, f) { return f.apply(t, a); })"
PROBE_HOOK_TS = (
    "(Reflect.get(Reflect.get(globalThis, 'process') || {}, '__selfixCall') || "
    "function (i: any, t: any, a: any, f: any) { return f.apply(t, a); })"
)
_CALLER_GLOBAL = b"typeof globalThis === 'object' ? globalThis : undefined"


def instrument_node_calls(path: str, text: str, targets: Sequence[tuple[str, str, int]]) -> tuple[str, dict[str, str]]:
    """``text`` with each target function (id, qualified name, its first line in the unpatched file) routed
    through ``PROBE_HOOK``, which sees its receiver, its arguments and what it returned or threw: the body becomes
    an inner function of the same parameters (an arrow's body, an arrow of the same plain parameters), written
    on the same lines, so stack traces and coverage keep their places. The second value: each target left as it
    was, and why (not found, a generator, a constructor, a getter, a body that uses ``super``)."""
    if not is_node_file(path):
        return text, {target: "not JavaScript or TypeScript" for target, _, _ in targets}
    source = text.encode("utf-8")
    root = _parse(path, text).root_node
    named: dict[str, list[Any]] = {}
    for node, qualified in _named_functions(root):
        named.setdefault(qualified, []).append(node)
    skipped: dict[str, str] = {}
    # Pure insertions around each body, at the unpatched text's offsets: a watched function nested in another
    # watched one (a rule's create and its visitor) composes. At one offset, the outer's opening goes first and
    # its closing last.
    inserts: list[tuple[int, int, bytes]] = []
    for target, qualname, first in targets:
        nodes = named.get(qualname)
        if not nodes:
            skipped[target] = "not found in this version"
            continue
        node = min(nodes, key=lambda n: abs(n.start_point[0] + 1 - first))
        routed = _routed(node, target, PurePosixPath(path).suffix in TS_SUFFIXES)
        if isinstance(routed, str):
            skipped[target] = routed
            continue
        depth = _depth(node)
        body = node.child_by_field_name("body")
        inserts += [(body.start_byte, -depth, routed[0]), (body.end_byte, depth, routed[1])]
    for offset, _, inserted in sorted(inserts, key=lambda i: (-i[0], i[1])):
        source = source[:offset] + inserted + source[offset:]
    return source.decode("utf-8"), skipped


def _depth(node: Any) -> int:
    depth = 0
    while node.parent is not None:
        node, depth = node.parent, depth + 1
    return depth


def _routed(node: Any, target: str, typescript: bool) -> tuple[bytes, bytes] | str:
    """What routes one function through the hook, written before and after its body; or why it cannot be."""
    body = node.child_by_field_name("body")
    if body is None:
        return "a declaration without a body"
    tokens = {child.type for child in node.children}
    if "*" in tokens or "generator" in node.type:
        return "a generator"
    if tokens & {"get", "set"}:
        return "a getter or setter"
    name = node.child_by_field_name("name")
    if node.type == "method_definition" and name is not None and _text(name) == "constructor":
        return "a constructor"
    prefix = b"async " if "async" in tokens else b""
    hook = (PROBE_HOOK_TS if typescript else PROBE_HOOK).encode() + b"(" + json.dumps(target).encode()
    if node.type == "arrow_function":
        single = node.child_by_field_name("parameter")
        plain = [single] if single is not None else []
        if single is None:
            listed = node.child_by_field_name("parameters")
            plain = [p for p in (listed.named_children if listed is not None else []) if p.type != "comment"]
        if any(p.type not in ("identifier", "required_parameter") for p in plain) or any(
            p.type == "required_parameter" and p.child_by_field_name("pattern").type != "identifier" for p in plain
        ):
            return "an arrow function whose parameters are not plain names"
        names = b", ".join((p.child_by_field_name("pattern") or p).text for p in plain)
        typed = b", ".join(p.text for p in plain)  # TypeScript's annotations kept on the inner arrow
        return (
            hook + b", undefined, [" + names + b"], " + prefix + b"(" + typed + b") => ",
            b", " + _CALLER_GLOBAL + b")",
        )
    if _uses_super(body):
        return "its body uses super"
    parameters = node.child_by_field_name("parameters")
    params = parameters.text if parameters is not None else b"()"
    if b"\n" in params:
        if b"//" in params:
            return "its parameters span lines with comments between them"
        params = b" ".join(part.strip() for part in params.splitlines())  # the inner copy keeps the lines
    if typescript:  # the inner function's ``this``, typed: strict TypeScript refuses an implicit any
        rest = params[1:-1].strip()
        params = b"(this: any" + (b", " + rest if rest else b"") + b")"
    return (
        b"{ return " + hook + b", this, arguments, " + prefix + b"function " + params + b" ",
        b", " + _CALLER_GLOBAL + b"); }",
    )


def _uses_super(node: Any) -> bool:
    if node.type == "super":
        return True
    return any(_uses_super(child) for child in node.children if child.type not in _FUNCTION_TYPES - {"arrow_function"})


def _statements(node: Any, lines: set[int], called: set[str]) -> None:
    """The first line of each statement inside a function's body, and the names it calls or mentions (not
    those of functions nested inside: theirs are their own)."""
    for child in node.children:
        kind = child.type
        if kind in _FUNCTION_TYPES:
            continue
        if kind.endswith(_STATEMENT_SUFFIXES) or kind in ("lexical_declaration", "variable_declaration"):
            lines.add(child.start_point[0] + 1)
        if kind == "call_expression" or kind == "new_expression":
            target = child.child_by_field_name("function") or child.child_by_field_name("constructor")
            if target is not None:
                if target.type == "member_expression":
                    prop = target.child_by_field_name("property")
                    if prop is not None:
                        called.add(_text(prop))
                elif target.type == "identifier":
                    called.add(_text(target))
        elif kind == "identifier":
            called.add(_text(child))
        _statements(child, lines, called)


# -- what the engines show of a JavaScript/TypeScript file --------------------------------------------------
_TEST_CALLS = frozenset({"it", "test", "specify", "xit", "fit"})
_SUITE_CALLS = frozenset({"describe", "context", "suite"})
_SETUP_CALLS = frozenset({"before", "beforeEach", "beforeAll", "after", "afterEach", "afterAll", "setup"})
MAX_OUTLINE_LINES = 3  # a top-level constant longer than this is not shown in an outline


def node_outline(path: str, text: str, limit: int = 30) -> set[int]:
    """A module's imports and ``require`` bindings whole, then its short top-level constants, in ``limit`` lines:
    what a slice of one of its functions needs beside it (is the helper the fix needs imported?)."""
    if not is_node_file(path):
        return set()
    tree = _parse(path, text)
    imports: set[int] = set()
    constants: set[int] = set()
    for node in tree.root_node.children:
        first, last = node.start_point[0] + 1, node.end_point[0] + 1
        span = set(range(first, last + 1))
        body = _text(node)
        if node.type == "import_statement" or ("require(" in body and last - first < 6):
            imports |= span
        elif node.type in ("lexical_declaration", "variable_declaration") and last - first < MAX_OUTLINE_LINES:
            constants |= span
        elif node.type == "expression_statement" and body.strip(";'\" ") == "use strict":
            imports |= span
    lines = set(sorted(imports)[:limit])
    for line in sorted(constants):
        if len(lines) >= limit:
            break
        lines.add(line)
    return lines


def _call_name(node: Any) -> str:
    target = node.child_by_field_name("function")
    if target is None:
        return ""
    if target.type == "member_expression":  # it.only, describe.each
        target = target.child_by_field_name("object")
    return _text(target) if target is not None and target.type == "identifier" else ""


def _first_string(node: Any) -> str | None:
    arguments = node.child_by_field_name("arguments")
    if arguments is None:
        return None
    for child in arguments.children:
        if child.type in ("string", "template_string"):
            return _text(child)[1:-1]
        if child.type not in ("(", ","):
            return None
    return None


NODE_MODULE_SUFFIXES = ("", ".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx", "/index.js", "/index.ts")


def node_relative_imports(path: str, text: str) -> list[str]:
    """The modules a JavaScript or TypeScript file loads by a relative path (``require('./x')``, ``import ... from
    '../y'``), as repository paths without the suffix resolution Node adds (``NODE_MODULE_SUFFIXES``), in the
    order they appear; [] for another file."""
    if not is_node_file(path):
        return []
    folder = PurePosixPath(path).parent
    found: list[str] = []

    def add(specifier: str | None) -> None:
        if specifier and specifier.startswith(("./", "../")):
            parts: list[str] = []
            for part in (folder / specifier).parts:
                if part == "..":
                    if parts:
                        parts.pop()
                elif part != ".":
                    parts.append(part)
            found.append("/".join(parts))

    stack = [_parse(path, text).root_node]
    while stack:
        node = stack.pop()
        if node.type == "call_expression" and _call_name(node) == "require":
            add(_first_string(node))
        elif node.type in ("import_statement", "export_statement"):
            source = node.child_by_field_name("source")
            add(_text(source)[1:-1] if source is not None else None)
        stack.extend(reversed(node.children))
    return list(dict.fromkeys(found))


def node_test_lines(path: str, text: str, titles: tuple[str, ...], limit: int = 30) -> set[int]:
    """The lines of the test ``titles`` names in a spec file (its ``it``/``test`` call, at most ``limit`` lines)
    and the setup hooks of the describe blocks around it; empty when it is not found (a title built at run time)."""
    if not is_node_file(path) or not titles:
        return set()
    tree = _parse(path, text)
    found: set[int] = set()

    def visit(node: Any, depth: int, hooks: list[Any]) -> bool:
        for child in node.children:
            if child.type == "call_expression":
                name, title = _call_name(child), _first_string(child)
                if name in _SUITE_CALLS and depth < len(titles) - 1 and title == titles[depth]:
                    inner_hooks = [*hooks]
                    if visit(child, depth + 1, inner_hooks):
                        return True
                    continue
                if name in _TEST_CALLS and title == titles[-1]:
                    first, last = child.start_point[0] + 1, child.end_point[0] + 1
                    found.update(range(first, min(last, first + limit - 1) + 1))
                    for hook in hooks:
                        hook_first = hook.start_point[0] + 1
                        found.update(range(hook_first, min(hook.end_point[0] + 1, hook_first + 15) + 1))
                    return True
                if name in _SETUP_CALLS:
                    hooks.append(child)
            if child.type not in ("call_expression",) and visit(child, depth, hooks):
                return True
            if child.type == "call_expression" and _call_name(child) not in _TEST_CALLS | _SUITE_CALLS:
                if visit(child, depth, hooks):
                    return True
        return False

    # A file another spec requires (Hexo's test/index.js loads them all) holds the inner describe blocks only:
    # the titles are matched from the outermost block down, then from each later one.
    for start in range(len(titles)):
        visit(tree.root_node, start, [])
        if found:
            return found
    return _case_lines(tree.root_node, titles[-1], limit)


def _string_value(node: Any) -> str | None:
    """A string literal's value (escapes read as JavaScript reads them); None for a template with substitutions."""
    if node.type == "template_string" and any(c.type == "template_substitution" for c in node.children):
        return None
    raw = _text(node)[1:-1]
    try:
        return str(json.loads('"' + raw.replace('\\"', '"').replace('"', '\\"') + '"'))
    except ValueError:
        return raw


def _joined_value(node: Any) -> str | None:
    """The value of ``["line 1", "line 2"].join("\\n")``, ESLint's way of writing a multi-line case's code; None
    for any other expression."""
    target = node.child_by_field_name("function")
    if target is None or target.type != "member_expression":
        return None
    array, method = target.child_by_field_name("object"), target.child_by_field_name("property")
    if array is None or array.type != "array" or method is None or _text(method) != "join":
        return None
    arguments = [c for c in node.child_by_field_name("arguments").children if c.type not in ("(", ")", ",")]
    separator = _string_value(arguments[0]) if arguments and arguments[0].type == "string" else ","
    items = [c for c in array.children if c.type not in ("[", "]", ",", "comment")]
    values = [_string_value(c) if c.type in ("string", "template_string") else None for c in items]
    if separator is None or any(v is None for v in values):
        return None
    return separator.join(v for v in values if v is not None)


def _is_joined(array: Any) -> bool:
    """Whether an array literal is the object of a ``.join(...)`` call (its strings are lines of one value)."""
    member = array.parent
    return (
        member is not None
        and member.type == "member_expression"
        and member.child_by_field_name("property") is not None
        and _text(member.child_by_field_name("property")) == "join"
    )


def _same_code(value: str | None, title: str) -> bool:
    # A report may carry a case's title with its newlines as spaces (a JUnit name), so whitespace runs compare
    # as one space.
    return value is not None and (value == title or value.split() == title.split())


def _case_lines(root: Any, title: str, limit: int) -> set[int]:
    """A data-driven test (ESLint's RuleTester: ``valid``/``invalid`` arrays whose cases are titled by their
    code): the case whose string is the title, with the object literal around it (its options and errors)."""
    stack = [root]
    while stack:
        node = stack.pop()
        line_of_joined = node.parent is not None and node.parent.type == "array" and _is_joined(node.parent)
        if (
            node.type in ("string", "template_string") and not line_of_joined and _same_code(_string_value(node), title)
        ) or (node.type == "call_expression" and _same_code(_joined_value(node), title)):
            holder = node.parent
            while holder is not None and holder.type not in ("object", "array"):
                holder = holder.parent
            shown = holder if holder is not None and holder.type == "object" else node
            first = shown.start_point[0] + 1
            return set(range(first, min(shown.end_point[0] + 1, first + limit - 1) + 1))
        stack.extend(reversed(node.children))
    return set()


def has_node_test(path: str, text: str) -> bool:
    """Whether a spec file declares a test: an ``it``/``test``/``specify`` call, or ESLint's RuleTester's
    ``run`` (``ruleTester.run(name, rule, {valid, invalid})``: it declares one mocha test per case)."""
    stack = [_parse(path, text).root_node]
    while stack:
        node = stack.pop()
        if node.type == "call_expression" and (_call_name(node) in _TEST_CALLS or _rule_tester_run(node)):
            return True
        stack.extend(node.children)
    return False


def _rule_tester_run(call: Any) -> bool:
    target = call.child_by_field_name("function")
    if target is None or target.type != "member_expression":
        return False
    prop, owner = target.child_by_field_name("property"), target.child_by_field_name("object")
    return prop is not None and _text(prop) == "run" and owner is not None and "ruletester" in _text(owner).lower()


def node_names_in_test(path: str, text: str, titles: tuple[str, ...]) -> set[str]:
    """The names a JavaScript test's own lines mention (what it calls, builds or reads): without coverage, the
    project's functions of those names are the suspects."""
    lines = node_test_lines(path, text, titles)
    if not lines:
        return set()
    names: set[str] = set()
    stack = [_parse(path, text).root_node]
    while stack:
        node = stack.pop()
        if node.end_point[0] + 1 < min(lines) or node.start_point[0] + 1 > max(lines):
            continue
        if node.type in ("identifier", "property_identifier") and node.start_point[0] + 1 in lines:
            names.add(_text(node))
        stack.extend(node.children)
    return names
