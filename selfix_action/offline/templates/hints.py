"""What the failing run tells the templates beyond the suspicious lines: the strings an assertion
compared (to edit the literal that produced the differing part) and the project's other source files
(to read a callee's signature where it is defined).

The engine builds a `Hints` from its evidence; without one (the default) the families that need it
propose nothing, so `candidate_edits(source, path, lines)` stays a function of the file alone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

# Reprs compared by an assertion: pytest's `assert 'a' == 'b'` and unittest's `'a' != 'b'`.
_STRING = r"""(?:[rbuRBU]{0,2}(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))"""
_COMPARED = re.compile(rf"({_STRING})\s*(?:==|!=)\s*({_STRING})")
# pytest's and unittest's line diff of two one-line strings: "- one" and "+ other", `?` guides between.
_DIFF = re.compile(r"^[ \t]*- (.*)\n(?:[ \t]*\?.*\n)?[ \t]*\+ (.*)$", re.MULTILINE)

_SHORTENED = "..."  # the marker pytest's saferepr puts where it cut a long repr short
_MAX_PAIRS = 4  # distinct compared pairs kept: each one multiplies the literal edits tried


def compared_strings(messages: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The (left, right) strings assertions in `messages` compared, first seen first, deduplicated."""
    pairs: list[tuple[str, str]] = []
    for message in messages:
        for match in _COMPARED.finditer(message):
            try:
                left, right = ast.literal_eval(match.group(1)), ast.literal_eval(match.group(2))
            except (ValueError, SyntaxError):
                continue
            if not (isinstance(left, str) and isinstance(right, str)) or left == right or (left, right) in pairs:
                continue
            if _SHORTENED in left or _SHORTENED in right:
                continue  # pytest cut the repr ('git push --f...th-lease'): not a string of the program
            pairs.append((left, right))
        # pytest shortens long reprs in its first line ("..."); its diff lines carry the whole strings.
        for match in _DIFF.finditer(message):
            left, right = match.group(1), match.group(2)
            if left != right and (left, right) not in pairs and (right, left) not in pairs:
                pairs.append((left, right))
    return tuple(pairs[:_MAX_PAIRS])


@dataclass(frozen=True)
class Hints:
    """Evidence a template family may consult; everything is optional."""

    # (left, right) strings the failing assertions compared; which side is the actual is not known
    compared: tuple[tuple[str, str], ...] = ()
    # repo-relative path -> source text, or None when it cannot be read (other project files)
    read_file: Callable[[str], str | None] | None = None
    # repo-relative paths of the project's source files, for resolving an import to its file
    list_files: Callable[[], Sequence[str]] | None = None
    _files: list[Sequence[str]] = field(default_factory=list, compare=False, repr=False)
    _trees: dict[str, ast.Module | None] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_failures(
        cls,
        messages: Iterable[str],
        read_file: Callable[[str], str] | None = None,
        list_files: Callable[[], Sequence[str]] | None = None,
    ) -> Hints:
        """Hints from the failing tests' messages and the project's files (a sandbox's readers)."""
        reader = None
        if read_file is not None:
            raw_reader = read_file

            def reader(path: str) -> str | None:
                try:
                    return raw_reader(path)
                except (OSError, ValueError, UnicodeDecodeError):
                    return None  # a file we cannot read has no signature to offer

        return cls(compared=compared_strings(messages), read_file=reader, list_files=list_files)

    def files(self) -> Sequence[str]:
        """The project's source files, listed once."""
        if not self._files:
            self._files.append(tuple(self.list_files()) if self.list_files is not None else ())
        return self._files[0]

    def tree(self, path: str) -> ast.Module | None:
        """The parsed module at `path`, cached; None when it cannot be read or parsed."""
        if path not in self._trees:
            text = self.read_file(path) if self.read_file is not None else None
            tree = None
            if text is not None:
                try:
                    tree = ast.parse(text)
                except (SyntaxError, ValueError):
                    tree = None
            self._trees[path] = tree
        return self._trees[path]

    def module_path(self, importer: str, module: str | None, level: int) -> str | None:
        """The project file defining `module` as imported from the file `importer` (relative imports too)."""
        parts = importer.split("/")[:-1]
        if level:
            if level - 1 > len(parts):
                return None
            base = parts[: len(parts) - (level - 1)]
            dotted = [*base, *(module.split(".") if module else [])]
        else:
            if not module:
                return None
            dotted = module.split(".")
        stem = "/".join(dotted)
        files = self.files()
        for suffix in (f"{stem}.py", f"{stem}/__init__.py"):
            if suffix in files:
                return suffix
            # A src/ layout or a package below the repository root: the longest unique suffix match.
            matches = [f for f in files if f.endswith("/" + suffix)]
            if len(matches) == 1:
                return matches[0]
        return None


NO_HINTS = Hints()
