"""What a heal leaves behind: trace.jsonl (with progress lines), report.json, report.md, patch.diff, view.html,
and, with ``--apply``, the verified patch in the user's tree."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import tempfile
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from selfix_action.errors import InputError
from selfix_action.heal.gitindex import UnreadableIndex, find_checkout, tracked_paths, tracked_under
from selfix_action.learn.trace_schema import TraceError, read_trace
from selfix_action.learn.viewer import render_html
from selfix_action.repair.paths import IGNORED_DIR_NAMES, TEST_DIR_NAMES, is_test_path
from selfix_action.repair.report import HealReport, render_markdown


class TraceWriter:
    """trace.jsonl (one event per step) and, with a ``stream``, the progress lines a person sees."""

    def __init__(self, trace_path: Path, stream: TextIO | None, header: dict[str, Any] | None = None) -> None:
        self.path = trace_path
        self._header = header
        self._handle: TextIO | None = None
        self._closed = False
        self._stream = stream
        self._started = time.monotonic()

    def open(self) -> None:
        """Create the file (its folder must exist); before this, events are refused, after close ignored."""
        self._handle = open(self.path, "w", encoding="utf-8")
        if self._header is not None:  # the trace schema's header record (selfix_action.learn.trace_schema)
            self._handle.write(json.dumps(self._header, default=str) + "\n")

    def __call__(self, step: str, message: str = "", **data: Any) -> None:
        if self._closed:
            return
        if self._handle is None:
            raise RuntimeError("trace event before the trace file was opened")
        event = {"t": round(time.monotonic() - self._started, 3), "step": step, "message": message, **data}
        self._handle.write(json.dumps(event, default=str) + "\n")
        self._handle.flush()
        if self._stream is not None:
            print(f"[selfix {event['t']:7.1f}s] {step}: {message}", file=self._stream, flush=True)

    def close(self) -> None:
        self._closed = True
        if self._handle is not None:
            self._handle.close()


@dataclass(frozen=True)
class OutputPaths:
    """The files one heal wrote (``patch`` and ``view`` may be missing: not healed, or an unreadable trace)."""

    out_dir: Path
    report_md: Path
    report_json: Path
    trace: Path
    patch: Path | None
    view: Path | None


def no_links(root: Path, path: Path) -> bool:
    """False if ``path`` (inside ``root``) goes through a symbolic link below ``root``: a committed link must not
    make selfix write outside the repository. Paths outside ``root`` are the user's choice and pass."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return True
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            return False
    return True


def inside(repo: Path, path: Path) -> Path:
    """``path`` with the repository part resolved and the rest not: a link planted below ``repo`` stays visible
    to ``no_links`` (``Path.resolve`` would follow it out of the repository)."""
    repo_abs = Path(os.path.abspath(repo))
    path_abs = Path(os.path.abspath(path))
    if path_abs.is_relative_to(repo_abs):
        return repo.resolve() / path_abs.relative_to(repo_abs)
    return path_abs


# What selfix writes into an output folder it created in a git work tree: the folder keeps itself out of
# ``git status`` and ``git add -A`` (as .pytest_cache does), so neither .git/info/exclude nor the project's
# .gitignore is ever touched, and deleting the folder leaves nothing behind.
GITIGNORE = "# selfix's output folder (report.md, patch.diff, trace.jsonl...): kept out of git\n*\n"


def out_dir_refusal(repo: Path, out_dir: Path) -> str | None:
    """Why ``out_dir`` must not receive selfix's files (report.md, report.json, patch.diff, trace.jsonl,
    view.html, replaced at every run), or None. Refused: an existing file, the repository itself, a folder of the
    project's tests (by name, by the tests it holds, or by pytest's ``testpaths``), and any path git tracks or a
    folder holding one."""
    repo = repo.resolve()
    out_dir = inside(repo, out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        return f"--out {out_dir} is an existing file, not a folder: selfix would replace it"
    if out_dir == repo:
        return f"--out {out_dir} is the repository itself: selfix's report.md, patch.diff... would land among its files"
    checkout = find_checkout(repo)
    if out_dir.is_relative_to(repo):
        rel = out_dir.relative_to(repo).as_posix()
        test_folder = _test_folder(repo, out_dir, rel)
        if test_folder:
            return f"--out {out_dir} is {test_folder}: pick a folder of its own, e.g. {repo / '.selfix'}"
    if checkout is not None and out_dir.is_relative_to(checkout.root):
        rel = out_dir.relative_to(checkout.root).as_posix()
        try:
            tracked = tracked_under(tracked_paths(checkout.git_dir), rel)
        except UnreadableIndex as exc:
            if out_dir.is_dir() and any(out_dir.iterdir()) and not _ours(out_dir):
                return f"--out {out_dir} is an existing folder and git's index cannot be read to check it: {exc}"
            return None
        if tracked:
            first = tracked[0]
            what = "a file git tracks" if first == rel else f"a folder holding files git tracks (first: {first})"
            return f"--out {out_dir} is {what}: selfix would overwrite or hide them"
    return None


def _test_folder(repo: Path, out_dir: Path, rel: str) -> str:
    """How ``out_dir`` (``rel`` in the repository) is a folder of the project's tests, or ""."""
    parts = PurePosixPath(rel).parts
    named = next((part for part in parts if part in TEST_DIR_NAMES), None)
    if named is not None:
        return f"inside the test folder {named!r}"
    for testpath in pytest_testpaths(repo):
        if rel == testpath or rel.startswith(testpath.rstrip("/") + "/"):
            return f"inside {testpath!r}, a folder pytest collects tests from (testpaths)"
    if out_dir.is_dir():
        for path in _files_below(out_dir):
            if is_test_path(path.name):  # test_*.py, *_test.py, conftest.py
                return f"a folder holding the project's tests (first: {path.relative_to(repo).as_posix()})"
    return ""


def _files_below(folder: Path, limit: int = 20000) -> Iterator[Path]:
    """Files below ``folder``, environments and caches skipped, at most ``limit`` looked at."""
    seen = 0
    for current, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in IGNORED_DIR_NAMES and not d.endswith(".egg-info")]
        for name in filenames:
            seen += 1
            if seen > limit:
                return
            yield Path(current) / name


def pytest_testpaths(repo: Path) -> list[str]:
    """pytest's ``testpaths`` from the first configuration file it would read (pytest.ini, pyproject.toml,
    tox.ini, setup.cfg), repository-relative; [] when none names any."""
    ini = repo / "pytest.ini"
    if ini.is_file():
        return _ini_testpaths(ini, "pytest")
    pyproject = repo / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            data = {}
        options = data.get("tool", {}).get("pytest", {}).get("ini_options")
        if isinstance(options, dict):
            value = options.get("testpaths", [])
            items = value.split() if isinstance(value, str) else [str(v) for v in value if isinstance(v, str)]
            return [_normal(item) for item in items]
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = repo / name
        if path.is_file():
            found = _ini_testpaths(path, section)
            if found:
                return found
    return []


def _ini_testpaths(path: Path, section: str) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return []
    return [_normal(item) for item in parser.get(section, "testpaths", fallback="").split()]


def _normal(item: str) -> str:
    return PurePosixPath(item.strip()).as_posix().removeprefix("./").rstrip("/") or "."


def _ours(out_dir: Path) -> bool:
    marker = out_dir / ".gitignore"
    try:
        return marker.is_file() and marker.read_text(encoding="utf-8") == GITIGNORE
    except (OSError, UnicodeDecodeError):
        return False


def prepare_out_dir(repo: Path, out_dir: Path) -> Path:
    """Create the output folder (refused through a link planted in the repository). A folder selfix creates in a
    git work tree gets a ``.gitignore`` of its own that keeps it out of ``git status``; a folder that existed is
    the user's and gets nothing (``out_dir_refusal`` has already refused a tracked or a test folder)."""
    repo = repo.resolve()
    out_dir = inside(repo, out_dir)
    if not no_links(repo, out_dir):
        raise InputError(f"{out_dir} goes through a symbolic link in the repository; not writing through it")
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    checkout = find_checkout(repo)
    if checkout is not None and out_dir.is_relative_to(checkout.root) and (created or out_dir.name == ".selfix"):
        marker = out_dir / ".gitignore"
        if not marker.exists():
            marker.write_text(GITIGNORE, encoding="utf-8")
    return out_dir


def write_report_files(out_dir: Path, report: HealReport, trace_path: Path) -> tuple[OutputPaths, list[str]]:
    """report.json, report.md, patch.diff (only when healed: never a stale one beside a new report) and
    view.html (best effort). Returns the paths and the warnings."""
    warnings: list[str] = []
    report_json = out_dir / "report.json"
    report_json.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    report_md = out_dir / "report.md"
    report_md.write_text(render_markdown(report), encoding="utf-8")
    patch = out_dir / "patch.diff"
    patch.unlink(missing_ok=True)
    if report.patch is not None:
        patch.write_text(report.patch.diff, encoding="utf-8")
    view = out_dir / "view.html"
    view.unlink(missing_ok=True)
    try:
        view.write_text(render_html(read_trace(trace_path)), encoding="utf-8")
    except (TraceError, OSError) as exc:
        warnings.append(f"no view.html: {exc}")
    written = OutputPaths(
        out_dir,
        report_md,
        report_json,
        trace_path,
        patch if report.patch is not None else None,
        view if view.is_file() else None,
    )
    return written, warnings


def apply_to_tree(repo: Path, files: Mapping[str, str], originals: Mapping[str, str]) -> None:
    """Write the verified patch into the user's tree, only if every file is still as selfix found it."""
    for path, original in originals.items():
        with open(repo / path, encoding="utf-8", newline="") as handle:
            if handle.read() != original:
                raise InputError(f"{path} changed while selfix was working; not applying (see patch.diff)")
    for path in files.keys() - originals.keys():  # a file the patch adds (a reported error's reproduction test)
        if (repo / path).exists() or (repo / path).is_symlink():
            raise InputError(f"{path} appeared while selfix was working; not applying (see patch.diff)")
    for path, text in files.items():
        target = repo / path
        # Write beside the file and rename, so an interrupted apply never leaves a half-written file.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".selfix")
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if target.exists():
            shutil.copymode(target, tmp)
        os.replace(tmp, target)
