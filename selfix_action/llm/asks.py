"""The answers to the Detective's and the Patcher's asks for more context: a file's line range, a symbol's
definition, or a search over the project, in the spirit of the view and search tools coding agents use.

Read-only and through the sandbox's scratch copy only (``read_file`` and ``source_files`` of the ``Sandbox``
protocol), never the host's files. Every path is checked here before the sandbox sees it (the sandbox refuses a
path that escapes its copy too): nothing outside the copy, nothing under ``.git/``, no file whose name says it
holds a secret (``.env``, ``*.pem``, ``id_rsa`` ...), nothing binary. Every answer is bounded (lines, matches,
characters, time) and says what it left out; the repository text it carries is untrusted (``untrusted.block``).
"""

from __future__ import annotations

import ast
import importlib
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from selfix_action.errors import SelfixError
from selfix_action.llm.schemas import AskAnswer
from selfix_action.repair.languages import function_spans, is_node_file
from selfix_action.untrusted import block, inline

ReadFile = Callable[[str], str]

MAX_FILE_LINES = 200  # lines of one file answer
MAX_SYMBOL_LINES = 120  # a definition longer than this is shown as its head and a window
SYMBOL_HEAD_LINES = 60
SYMBOL_WINDOW = 20  # lines either side of a suspicious line inside a long definition
MAX_SYMBOL_MATCHES = 3
MAX_SEARCH_LINES = 40
MAX_SEARCH_FILE_CHARS = 1_000_000  # larger files are skipped by a search (generated or data files)
MAX_SEARCH_LINE_CHARS = 2000  # a regular expression sees at most this much of one line
SHOWN_LINE_CHARS = 240  # a search result's line is cut here
SEARCH_SECONDS = 5.0
MAX_ANSWER_CHARS = 16_000  # one answer's text at most (about 4000 tokens)

# Folders and names never shown: version control, and files that by their name hold keys or passwords.
REFUSED_DIRS = frozenset({".git", ".hg", ".svn", ".ssh", ".gnupg", ".aws", ".docker"})
SECRET_NAMES = frozenset(
    {
        ".env",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".pypirc",
        ".npmrc",
        ".htpasswd",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
    }
)
SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".gpg", ".asc")
SECRET_PREFIXES = (".env.", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")


@dataclass(frozen=True)
class AskReply:
    """One ask's answer: ``heading`` says what was asked (the model's values, cleaned), ``body`` the repository
    text (untrusted) or, when ``refused``, selfix's reason; ``files`` the files whose text the body shows."""

    heading: str
    body: str
    refused: bool = False
    files: tuple[str, ...] = ()

    def render(self, number: int) -> str:
        if self.refused:
            return f"Ask {number}: {self.heading}\nNot answered: {self.body}"
        return f"Ask {number}: {self.heading}\n" + block(
            f"ask {number} answer", self.body, code=True, limit=MAX_ANSWER_CHARS
        )


def path_refusal(path: str) -> str | None:
    """Why an ask may not read ``path`` (repository-relative), or None when it may."""
    if not path:
        return "no path was given"
    pure = PurePosixPath(path)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", path) or ".." in pure.parts or "\x00" in path:
        return "the path is outside the repository copy; give a repository-relative path"
    if any(part in REFUSED_DIRS for part in pure.parts):
        return "version-control and credential folders are not shown"
    name = pure.name.lower()
    if name in SECRET_NAMES or name.endswith(SECRET_SUFFIXES) or name.startswith(SECRET_PREFIXES):
        return "the file's name says it may hold a secret (a key, a password or a token); it is not shown"
    return None


def normalized(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def evidence_test_files(nodeids: Iterable[str], read_file: ReadFile) -> list[str]:
    """The test files the evidence names (node ids' files) and the conftest.py files above them, in order."""
    files = dict.fromkeys(nodeid.partition("::")[0] for nodeid in nodeids if nodeid)
    conftests: dict[str, None] = {}
    for path in files:
        parent = PurePosixPath(path).parent
        for folder in [parent, *parent.parents]:
            candidate = (folder / "conftest.py").as_posix().removeprefix("./")
            if candidate in conftests or candidate in files:
                continue
            try:
                read_file(candidate)
            except (OSError, UnicodeDecodeError, ValueError, SelfixError):
                continue
            conftests[candidate] = None
    return [p for p in [*files, *conftests] if path_refusal(p) is None]


@dataclass(frozen=True)
class Definition:
    path: str
    qualname: str  # Class.method, function, CONSTANT, Class.ATTRIBUTE
    kind: str  # function, class, assignment
    start: int  # the first line, decorators included
    end: int


def definitions(path: str, text: str) -> list[Definition]:
    """The module's functions, classes, methods and module or class-level assignments (not nested functions); a
    JavaScript or TypeScript module's functions and methods as tree-sitter finds them (``repair.languages``)."""
    if is_node_file(path):
        return [Definition(path, span.name, "function", span.start, span.end) for span in function_spans(path, text)]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    found: list[Definition] = []

    def visit(body: Sequence[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                found.append(Definition(path, prefix + node.name, kind, start, node.end_lineno or node.lineno))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            found.append(
                                Definition(path, prefix + name.id, "assignment", node.lineno, node.end_lineno or 0)
                            )
            elif isinstance(node, ast.If | ast.Try):  # definitions under a version check or a guarded import
                visit(node.body, prefix)
                visit(node.orelse, prefix)
                if isinstance(node, ast.Try):
                    visit(node.finalbody, prefix)
                    for handler in node.handlers:
                        visit(handler.body, prefix)

    visit(tree.body, "")
    return found


def _module_name(path: str) -> str:
    return PurePosixPath(path).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")


def _symbol_rank(definition: Definition, name: str) -> int | None:
    """How well ``definition`` matches the asked ``name`` (lower is better), or None when it does not."""
    if definition.qualname == name:
        return 0
    full = f"{_module_name(definition.path)}.{definition.qualname}"
    if full == name or ("." in name and full.endswith("." + name)):
        return 1
    if definition.qualname.endswith("." + name):
        return 2  # a method or class attribute asked for by its own name
    return None


def nested_repetition(pattern: str) -> bool:
    """True when the regular expression repeats something that repeats ((a+)+, (\\w*)*): such a pattern can take
    exponential time on a line that almost matches, and Python's ``re`` has no timeout."""
    try:
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern)
    except Exception:  # the parser is private: without it, the per-line and per-search bounds remain
        return False

    def walk(sub: Any, inside: bool) -> bool:
        for op, arg in getattr(sub, "data", ()):
            name = str(op)
            if name.endswith("REPEAT"):
                _, high, inner = arg
                many = high > 1
                if many and inside:
                    return True
                if walk(inner, inside or many):
                    return True
            elif name == "SUBPATTERN":
                if walk(arg[-1], inside):
                    return True
            elif name == "BRANCH":
                if any(walk(branch, inside) for branch in arg[1]):
                    return True
            elif name == "ATOMIC_GROUP":
                if walk(arg, inside):
                    return True
        return False

    return walk(parsed, False)


@dataclass
class RepositoryView:
    """The asks' read-only view of the sandbox's copy: ``source_files`` (the editable ones) and ``test_files``
    (the evidence's), read through ``read_file``. ``focus``: suspicious lines per file, the window a long
    definition is shown around."""

    read_file: ReadFile
    source_files: Sequence[str]
    test_files: Sequence[str] = ()
    focus: Mapping[str, Sequence[int]] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    _definitions: dict[str, list[Definition]] = field(default_factory=dict)

    def answer(self, ask: AskAnswer) -> AskReply:
        if ask.kind == "file":
            return self.file_range(ask.path, ask.line_start, ask.line_end)
        if ask.kind == "symbol":
            return self.symbol(ask.name)
        return self.search(ask.pattern, regex=ask.regex)

    # -- file ------------------------------------------------------------------------------------------
    def _text(self, path: str) -> tuple[str | None, str]:
        """(the file's text, "") or (None, why it cannot be shown)."""
        problem = path_refusal(path)
        if problem is not None:
            return None, problem
        try:
            text = self.read_file(path)
        except UnicodeDecodeError:
            return None, "the file is not UTF-8 text (binary files are not shown)"
        except IsADirectoryError:
            return None, "that is a folder; ask for a file in it"
        except SelfixError:  # the sandbox's own check: the path (a link in it) leads out of the copy
            return None, "the path leads outside the repository copy (a link); it is not shown"
        except (OSError, ValueError):
            known = sorted({*self.source_files, *self.test_files})
            close = [p for p in known if PurePosixPath(p).name == PurePosixPath(path).name][:3]
            hint = f" (files of that name: {', '.join(close)})" if close else ""
            return None, f"no such file in the repository copy{hint}"
        if "\x00" in text:
            return None, "the file is binary; it is not shown"
        return text, ""

    def file_range(self, path: str, start: int = 1, end: int = 0) -> AskReply:
        path = normalized(path)
        heading = f"file {inline(path, 200)} lines {start}-{end or 'end'}"
        text, problem = self._text(path)
        if text is None:
            return AskReply(heading, problem, refused=True)
        lines = text.splitlines()
        if not lines:
            return AskReply(heading, f"{path} is empty", files=(path,))
        notes = []
        first = max(1, start)
        if first > len(lines):
            return AskReply(heading, f"{path} has only {len(lines)} lines; ask for lines 1-{len(lines)}", refused=True)
        last = len(lines) if end <= 0 else min(end, len(lines))
        if last < first:
            first, last = last, first
        if end > len(lines):
            notes.append(f"the file ends at line {len(lines)}")
        if last - first + 1 > MAX_FILE_LINES:
            last = first + MAX_FILE_LINES - 1
            notes.append(f"clipped to {MAX_FILE_LINES} lines; ask again from line {last + 1} for more")
        numbered = "\n".join(f"{n:>5} | {lines[n - 1]}" for n in range(first, last + 1))
        head = f"{path} ({len(lines)} lines), lines {first}-{last}" + (f" ({'; '.join(notes)})" if notes else "")
        return AskReply(heading, f"{head}\n{numbered}", files=(path,))

    # -- symbol ----------------------------------------------------------------------------------------
    def _definitions_of(self, path: str) -> list[Definition]:
        if path not in self._definitions:
            text, _ = self._text(path)
            self._definitions[path] = definitions(path, text) if text is not None else []
        return self._definitions[path]

    def symbol(self, name: str) -> AskReply:
        wanted = name.strip().strip("`").removesuffix("()").strip()
        heading = f"symbol {inline(wanted, 200)}"
        if ":" in wanted:  # "path.py:name" or "path.py::name"
            where, _, wanted = wanted.rpartition(":")
            files = [normalized(where.rstrip(":"))]
            text, problem = self._text(files[0])
            if text is None:
                return AskReply(heading, problem, refused=True)
        else:
            files = list(dict.fromkeys([*self.source_files, *self.test_files]))
        if not wanted:
            return AskReply(heading, "no name was given", refused=True)
        matches: list[tuple[int, int, Definition]] = []
        for order, path in enumerate(files):
            for definition in self._definitions_of(path):
                rank = _symbol_rank(definition, wanted)
                if rank is not None:
                    matches.append((rank, order, definition))
        matches.sort(key=lambda m: (m[0], m[1], m[2].start))
        note = ""
        if not matches and "." in wanted:
            # Class.method where the class is another (a base class, a sibling): the method by its own name.
            own = wanted.rsplit(".", 1)[1]
            for order, path in enumerate(files):
                for definition in self._definitions_of(path):
                    if (rank := _symbol_rank(definition, own)) is not None:
                        matches.append((rank, order, definition))
            matches.sort(key=lambda m: (m[0], m[1], m[2].start))
            if matches:
                note = f"no definition of {inline(wanted, 200)}; definitions named {inline(own, 200)}:\n\n"
        if not matches:
            return AskReply(
                heading,
                f"no definition of {inline(wanted, 200)} in the project's source or test files (a function, "
                "Class.method, class or module constant); a search finds other uses",
                refused=True,
            )
        shown = [d for _, _, d in matches[:MAX_SYMBOL_MATCHES]]
        parts = [self._render_definition(d) for d in shown]
        rest = [d for _, _, d in matches[MAX_SYMBOL_MATCHES:]]
        if rest:
            where = ", ".join(f"{d.path}:{d.start} {d.qualname}" for d in rest[:10])
            parts.append(f"{len(rest)} more definition(s): {where}" + (" ..." if len(rest) > 10 else ""))
        return AskReply(heading, note + "\n\n".join(parts), files=tuple(dict.fromkeys(d.path for d in shown)))

    def _render_definition(self, definition: Definition) -> str:
        lines = self.read_file(definition.path).splitlines()
        start, end = definition.start, min(definition.end, len(lines))
        title = f"{definition.path}: {definition.kind} {definition.qualname}, lines {start}-{end}"
        if end - start + 1 <= MAX_SYMBOL_LINES:
            wanted = set(range(start, end + 1))
        else:
            wanted = set(range(start, start + SYMBOL_HEAD_LINES))
            inside = [n for n in self.focus.get(definition.path, ()) if start <= n <= end]
            centre = inside[0] if inside else None
            if centre is not None:
                wanted |= set(range(max(start, centre - SYMBOL_WINDOW), min(end, centre + SYMBOL_WINDOW) + 1))
            title += f" (long: its first {SYMBOL_HEAD_LINES} lines" + (
                f" and lines around {centre}" if centre is not None else ""
            )
            title += "; ask for a file range to see the rest)"
        out = [title]
        previous = start - 1
        for n in sorted(wanted):
            if n > previous + 1:
                out.append("  ...")
            out.append(f"{n:>5} | {lines[n - 1]}")
            previous = n
        if previous < end:
            out.append("  ...")
        return "\n".join(out)

    # -- search ----------------------------------------------------------------------------------------
    def search(self, pattern: str, *, regex: bool = False) -> AskReply:
        heading = f"search {'regular expression' if regex else 'text'} {inline(pattern, 200)!r}"
        if not pattern:
            return AskReply(heading, "no pattern was given", refused=True)
        matcher: Callable[[str], bool]
        if regex:
            try:
                compiled = re.compile(pattern)
            except (re.error, RecursionError, OverflowError) as exc:
                return AskReply(
                    heading,
                    f"the regular expression does not compile ({exc}); ask again with a corrected one, or with regex "
                    "false for a literal text",
                    refused=True,
                )
            if nested_repetition(pattern):
                return AskReply(
                    heading,
                    "the regular expression repeats a repetition (like (a+)+), which can take exponential time; "
                    "ask again with a simpler one",
                    refused=True,
                )
            matcher = lambda line: compiled.search(line[:MAX_SEARCH_LINE_CHARS]) is not None  # noqa: E731
        else:
            matcher = lambda line: pattern in line  # noqa: E731
        files = [p for p in dict.fromkeys([*self.source_files, *self.test_files]) if path_refusal(p) is None]
        deadline = self.clock() + SEARCH_SECONDS
        hits: list[str] = []
        total = 0
        hit_files: set[str] = set()
        searched = 0
        skipped: list[str] = []
        stopped = ""
        for path in files:
            if self.clock() > deadline:
                stopped = f"the search stopped after {SEARCH_SECONDS:g}s, {len(files) - searched} file(s) not searched"
                break
            try:
                text = self.read_file(path)
            except (OSError, UnicodeDecodeError, ValueError, SelfixError):
                continue
            if len(text) > MAX_SEARCH_FILE_CHARS or "\x00" in text:
                skipped.append(path)
                continue
            searched += 1
            for number, line in enumerate(text.splitlines(), 1):
                if matcher(line):
                    total += 1
                    hit_files.add(path)
                    if len(hits) < MAX_SEARCH_LINES:
                        shown = line if len(line) <= SHOWN_LINE_CHARS else line[:SHOWN_LINE_CHARS] + " ..."
                        hits.append(f"{path}:{number}: {shown}")
        notes = []
        if total > len(hits):
            notes.append(f"{total - len(hits)} more matching line(s) not shown; narrow the pattern")
        if skipped:
            notes.append(
                f"skipped (larger than {MAX_SEARCH_FILE_CHARS // 1_000_000} MB or binary): {', '.join(skipped)}"
            )
        if stopped:
            notes.append(stopped)
        if not total:
            summary = f"no match in {searched} source and test file(s)"
        else:
            summary = f"{total} matching line(s) in {len(hit_files)} of {searched} source and test file(s)"
        body = "\n".join([summary, *hits, *notes])
        return AskReply(heading, body)


def ask_heading(ask: AskAnswer) -> str:
    """One line naming an ask, for the trace."""
    if ask.kind == "file":
        return f"file {ask.path} lines {ask.line_start}-{ask.line_end or 'end'}"
    if ask.kind == "symbol":
        return f"symbol {ask.name}"
    return f"search {'regex' if ask.regex else 'text'} {ask.pattern!r}"


def reply_message(replies: Sequence[AskReply], asks_left: int, rounds_left: int) -> str:
    """The user turn that answers one round of asks and says what may come next (the adapter adds the form of the
    answer in its structured mode's words)."""
    parts = ["Here are the answers to your asks (code is numbered as above; line numbers are not part of the file)."]
    parts += [reply.render(number) for number, reply in enumerate(replies, 1)]
    if asks_left <= 0 or rounds_left <= 0:
        why = "in this run" if asks_left <= 0 else "for this answer"
        parts.append(f"You have no asks left {why}: give your final answer now, without asks (another ask is refused).")
    else:
        parts.append(f"Now give your answer, or ask again if you still need to ({asks_left} ask(s) left in this run).")
    return "\n\n".join(parts)
