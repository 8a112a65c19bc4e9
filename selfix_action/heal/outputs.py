"""What a heal leaves behind: trace.jsonl (with progress lines), report.json, report.md, patch.diff, view.html,
and, with ``--apply``, the verified patch in the user's tree."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from selfix_action.engine.report import HealReport, render_markdown
from selfix_action.errors import InputError
from selfix_action.learn.trace_schema import TraceError, read_trace
from selfix_action.learn.viewer import render_html


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


def prepare_out_dir(repo: Path, out_dir: Path) -> Path:
    """Create the output folder (refused through a link planted in the repository) and keep it out of
    ``git status`` without touching the project's .gitignore."""
    repo = repo.resolve()
    out_dir = inside(repo, out_dir)
    if not no_links(repo, out_dir):
        raise InputError(f"{out_dir} goes through a symbolic link in the repository; not writing through it")
    out_dir.mkdir(parents=True, exist_ok=True)
    git_dir = repo / ".git"
    if git_dir.is_dir() and not git_dir.is_symlink() and out_dir.is_relative_to(repo):
        entry = "/" + out_dir.relative_to(repo).as_posix() + "/"
        exclude = git_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if entry not in existing.splitlines():
            with open(exclude, "a", encoding="utf-8") as handle:
                handle.write(("" if existing.endswith("\n") or not existing else "\n") + entry + "\n")
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
    for path, text in files.items():
        target = repo / path
        # Write beside the file and rename, so an interrupted apply never leaves a half-written file.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".selfix")
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if target.exists():
            shutil.copymode(target, tmp)
        os.replace(tmp, target)
