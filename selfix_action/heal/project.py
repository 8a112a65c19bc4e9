"""Where the project lives in the repository: the root, or a subfolder (a monorepo's ``backend/``).

The heal runs on the project as its CI runs it: pytest started in the project's folder, which is the scratch
copy's root, so node ids, localization and candidates are the project's own paths. What leaves the heal (the
patch, its files, the report's diff) is put back in repository-relative paths (``in_repository``), and the
repository-relative protected patterns are read relative to the project (``project_patterns``): the
never-edit-tests rule and the PR stay the repository's.

The folder is the ``working_directory`` option, or, when that is not set, found: the folder in which the CI
report's failing tests are (their ``file`` attribute, or the module their classname names), or without a report,
the one folder of the repository that holds a Python project when its root holds none. Ambiguity keeps the root.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from selfix_action.errors import InputError
from selfix_action.repair.loop import HealResult
from selfix_action.repair.reported import ReportedTest
from selfix_action.toolchains.node import NodeProject, detect_project

# Files that make a folder a Python project (or its pytest configuration).
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini")
# Folders never searched for a project: caches, environments, vendored trees, version control.
_SKIPPED_DIRS = {"node_modules", "site-packages", "__pycache__", "venv", "env", "build", "dist"}
_SEARCH_DEPTH = 3


@dataclass(frozen=True)
class ProjectFolder:
    """The project's folder, repository-relative (``""``: the root), and how it was chosen (``""`` for the root
    by default, to say nothing)."""

    path: str = ""
    note: str = ""


def checked_folder(repo: Path, working_directory: str) -> str:
    """``working_directory`` as a clean repository-relative folder ("" for the root); bad input refused."""
    raw = working_directory.strip().replace("\\", "/")
    pure = PurePosixPath(raw or ".")
    if pure.is_absolute() or ".." in pure.parts:
        raise InputError(f"working_directory must be a folder inside the repository: {working_directory!r}")
    rel = "" if str(pure) == "." else str(pure)
    current = repo
    for part in pure.parts if rel else ():
        current = current / part
        if current.is_symlink():
            raise InputError(f"working_directory goes through a symbolic link: {working_directory!r}")
    if not current.is_dir():
        raise InputError(f"working_directory is not a folder of the repository: {working_directory!r}")
    return rel


def project_folder(repo: Path, working_directory: str | None, reported: Sequence[ReportedTest]) -> ProjectFolder:
    """The project's folder: the option when set (``"."``: the root, nothing searched), else found."""
    if working_directory:
        folder = checked_folder(repo, working_directory)
        return ProjectFolder(folder, f"the project in {folder}/ (working_directory)" if folder else "")
    if reported:
        if all(_holds(repo, case) for case in reported):
            return ProjectFolder()
        holding = [f for f in _project_dirs(repo) if all(_holds(repo / f, case) for case in reported)]
        return _the_one(holding, "from the report: its failing tests are there, not at the repository's root")
    if any((repo / marker).is_file() for marker in PROJECT_MARKERS):
        return ProjectFolder()
    return _the_one(list(_project_dirs(repo)), "as the repository's one Python project (its root has none)")


def _the_one(candidates: list[str], how: str) -> ProjectFolder:
    """The one candidate folder, said how it was found; the root when there is none or more than one."""
    if len(candidates) != 1:
        return ProjectFolder()
    folder = candidates[0]
    return ProjectFolder(folder, f"the project in {folder}/, found {how} (set working_directory to choose another)")


def _module_paths(dotted: str) -> Iterator[str]:
    """``a.b.C`` -> ``a.py``, ``a/b.py``, ``a/b/C.py``: the modules a JUnit classname may start with."""
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        yield "/".join(parts[:i]) + ".py"


def _holds(folder: Path, case: ReportedTest) -> bool:
    """Whether ``folder`` holds the module of ``case`` as the report names it (pytest started there)."""
    if case.file:
        return (folder / case.file).is_file()
    dotted = case.classname or case.name  # a collection error's name is its module
    return any((folder / path).is_file() for path in _module_paths(dotted))


def _project_dirs(repo: Path) -> Iterator[str]:
    """The repository's folders (below its root, at most ``_SEARCH_DEPTH`` deep) that hold a Python project."""
    for current, dirs, files in os.walk(repo):
        rel = Path(current).relative_to(repo)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS and not (Path(current) / d).is_symlink()
        )
        if len(rel.parts) >= _SEARCH_DEPTH:
            dirs[:] = []
        if rel.parts and any(marker in files for marker in PROJECT_MARKERS):
            yield rel.as_posix()


def project_patterns(patterns: Sequence[str], folder: str) -> tuple[str, ...]:
    """Repository-relative protected patterns, read relative to the project: ``backend/legacy/*`` is
    ``legacy/*``; a pattern starting with ``*`` matches at any depth and stays; one anchored elsewhere in the
    repository cannot match a file of the project. The publisher checks the repository-relative paths again."""
    if not folder:
        return tuple(patterns)
    prefix = folder + "/"
    kept: list[str] = []
    for pattern in patterns:
        if pattern.startswith(prefix):
            kept.append(pattern[len(prefix) :])
        elif pattern.startswith("*"):
            kept.append(pattern)
        elif fnmatch.fnmatch(prefix, pattern) or fnmatch.fnmatch(folder, pattern):
            kept.append("*")  # the whole project is protected
    return tuple(kept)


def in_repository(result: HealResult, folder: str) -> HealResult:
    """The heal's result with every path of the patch repository-relative (the project is in ``folder``)."""
    if not folder:
        return result

    def moved(files: dict[str, str]) -> dict[str, str]:
        return {f"{folder}/{path}": text for path, text in files.items()}

    report = result.report
    if report.patch is not None:
        patch = report.patch.model_copy(
            update={
                "files": tuple(f"{folder}/{path}" for path in report.patch.files),
                "diff": moved_diff(report.patch.diff, folder),
            }
        )
        report = report.model_copy(update={"patch": patch})
    files = moved(result.files) if result.files is not None else None
    return dataclasses.replace(result, report=report, files=files, originals=moved(result.originals))


def moved_diff(diff: str, folder: str) -> str:
    """A unified diff of the project's files with its paths put under ``folder``: only the file headers change
    (a hunk's removed line may itself read ``-- a/...``)."""
    out: list[str] = []
    in_header = False
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git a/"):
            in_header = True
            old, sep, new = line[len("diff --git a/") :].partition(" b/")
            line = f"diff --git a/{folder}/{old}{sep}{folder}/{new}" if sep else line
        elif line.startswith("@@"):
            in_header = False
        elif in_header and line.startswith(("--- a/", "+++ b/")):
            line = f"{line[:6]}{folder}/{line[6:]}"
        out.append(line)
    return "".join(out)


# Folders a JavaScript project holds that say nothing of its own language (installed packages, build output).
_NOT_THE_PROJECT = frozenset({"node_modules", ".git", "dist", "build", "coverage", ".next", ".venv", "venv"})


def node_project(folder: Path, toolchain: str = "auto") -> NodeProject | None:
    """The Node project in ``folder`` when it is a JavaScript or TypeScript project: with ``toolchain`` "auto", a
    ``package.json`` and not one Python file (installed packages and build output do not count; a repository that
    holds both, a Python backend beside a frontend, is a Python project); "node" says so whatever else is there,
    "python" never. InputError when its package.json names no runner selfix knows."""
    if toolchain not in ("auto", "python", "node"):
        raise InputError(f"toolchain must be auto, python or node, got {toolchain!r}")
    manifest = folder / "package.json"
    if toolchain == "python":
        return None
    if not manifest.is_file():
        if toolchain == "node":
            raise InputError(f"toolchain is node, but {folder.name or folder} has no package.json")
        return None
    for _folder, dirs, files in os.walk(folder if toolchain == "auto" else folder / "-never-"):
        dirs[:] = [d for d in dirs if d not in _NOT_THE_PROJECT]
        if any(name.endswith(".py") for name in files):
            return None
    try:
        return detect_project(manifest.read_text(encoding="utf-8", errors="replace"), os.listdir(folder))
    except InputError as exc:
        raise InputError(f"{folder.name or folder} is a JavaScript/TypeScript project, but {exc}") from exc
