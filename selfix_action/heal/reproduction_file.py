"""Where a reported error's reproduction test goes: a new file among the project's tests, beside the test modules
that import the module the error was raised in, named the way that folder names its tests (``test_*.py`` or
``*_test.py``), so the project's own pytest configuration collects it with the rest of the suite and the PR adds
it where a maintainer would have put it. Never an existing file."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from selfix_action.heal.outputs import pytest_testpaths
from selfix_action.repair.paths import IGNORED_DIR_NAMES, is_test_path
from selfix_action.repair.reported_error import locate_frames
from selfix_action.tracebacks import ReportedError

MAX_FILES = 20000
_SKIPPED = IGNORED_DIR_NAMES | {"node_modules"}
MAX_IMPORT_LINES = 30
_IMPORT = re.compile(r"^\s*(?:from\s+[\w.]+\s+import\s|import\s+[\w.])")


@dataclass(frozen=True)
class ReproductionFile:
    path: str  # project-relative, posix
    imports: str  # the import lines of the test module it sits beside ("" when none)


def _python_files(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs if d not in IGNORED_DIR_NAMES and not d.startswith(".") and d != "node_modules"
        )
        rel = Path(folder).relative_to(root)
        found += [(rel / name).as_posix() for name in sorted(names) if name.endswith(".py")]
        if len(found) > MAX_FILES:
            break
    return found


def _module_names(path: str) -> tuple[str, ...]:
    """The dotted names a test may import ``path`` by: with and without a leading ``src/``-like folder."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    names = [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]
    return tuple(dict.fromkeys(names[:3]))


def _imports(root: Path, path: str) -> list[str]:
    try:
        text = (root / path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines() if _IMPORT.match(line)][:MAX_IMPORT_LINES]


def _score(imports: list[str], modules: tuple[str, ...]) -> int:
    """2: a line names the module by a dotted name of two parts or more; 1: by its own name alone; 0: neither."""
    text = "\n".join(imports)
    if any("." in m and re.search(rf"\b{re.escape(m)}\b", text) for m in modules):
        return 2
    own = modules[-1].rsplit(".", 1)[-1] if modules else ""
    return 1 if own and re.search(rf"\b{re.escape(own)}\b", text) else 0


def _slug(text: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()[:40] or "error"


def reproduction_file(root: Path, error: ReportedError) -> ReproductionFile:
    """The new test file for ``error`` in the project at ``root`` (its folder in the repository)."""
    files = _python_files(root)
    tests = [f for f in files if is_test_path(f) and PurePosixPath(f).name != "conftest.py"]
    testpaths = [p.strip("/") for p in pytest_testpaths(root) if p and p != "."]
    if testpaths:
        tests = [t for t in tests if any(t == p or t.startswith(p + "/") for p in testpaths)] or tests
    located = locate_frames(error, [f for f in files if not is_test_path(f)])
    raised_in = next((item.file for item in reversed(located) if item.file is not None), None)
    modules = _module_names(raised_in) if raised_in else ()
    function = next((item.frame.short_function for item in reversed(located) if item.file is not None), "")
    imports = {t: _imports(root, t) for t in tests}
    per_dir = Counter(PurePosixPath(t).parent.as_posix() for t in tests)
    best = max(
        tests, key=lambda t: (_score(imports[t], modules), per_dir[PurePosixPath(t).parent.as_posix()]), default=None
    )
    if best is not None:
        folder = PurePosixPath(best).parent.as_posix()
    elif testpaths and (root / testpaths[0]).is_dir():
        folder = testpaths[0]
    else:
        folder = "tests" if (root / "tests").is_dir() else "."
    beside = [PurePosixPath(t).name for t in tests if PurePosixPath(t).parent.as_posix() == folder]
    suffix_style = sum(n.endswith("_test.py") for n in beside) > sum(n.startswith("test_") for n in beside)
    stem = f"selfix_{_slug(function)}_{error.fingerprint[:8]}"
    path = ""
    for count in range(1, 100):
        numbered = stem if count == 1 else f"{stem}_{count}"
        name = f"{numbered}_test.py" if suffix_style else f"test_{numbered}.py"
        path = name if folder == "." else f"{folder}/{name}"
        if not (root / path).exists():
            break
    return ReproductionFile(path=path, imports="\n".join(imports[best]) if best is not None else "")
