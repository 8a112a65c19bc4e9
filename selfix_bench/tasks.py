"""Benchmark task files and the repositories they describe.

A task is one JSON file: where the library comes from (a PyPI sdist pinned by sha256, or a local directory for
tests), the injected bug (a text splice at an offset in one source file, so the original formatting is kept),
the fail-to-pass and pass-to-pass test ids, and a bug report written only from failing test names and assertion
output. The reference fix is the inverse splice; it lives only in the task file, never in the repo the tool sees.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from selfix_action.errors import InputError
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.base import (
    CACHE_DIR,
    PIP_TIMEOUT,
    coverage_requirement,
    is_under,
    load_folder,
    not_passed,
    read_task_data,
    venv_python,
)

SCHEMA = 1
KIND = "mutant"
JUDGE_WALL_SECONDS = 120.0


@dataclass(frozen=True)
class Bug:
    path: str  # repo-relative source file
    line: int  # 1-based line of the change
    start: int  # character offset of the change in the original file
    original: str  # original text at [start, start + len(original))
    mutated: str  # text that replaces it in the buggy repo
    template: str = ""  # the mutation kind


@dataclass(frozen=True)
class Task:
    id: str
    source: dict[str, Any]  # {"kind": "sdist", name, version, filename, sha256, root} | {"kind": "dir", path}
    bug: Bug
    f2p: tuple[str, ...]
    p2p: tuple[str, ...]
    bug_report: str
    test_paths: tuple[str, ...]  # repo-relative test files/dirs restored from the source before judging
    pytest: str = ""  # pip requirement for the test environment ("" = the running interpreter's pytest)
    base_dir: str = ""  # directory of the task file (for relative "dir" sources); not serialized
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("base_dir")
        data["schema"] = SCHEMA
        data["f2p"] = list(self.f2p)
        data["p2p"] = list(self.p2p)
        data["test_paths"] = list(self.test_paths)
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    # -- the BenchTask protocol (base.py) --------------------------------------------------------------
    @property
    def kind(self) -> str:
        return KIND

    @property
    def library(self) -> str:
        return str(self.source.get("name", self.source.get("kind")))

    @property
    def family(self) -> str:
        return self.bug.template

    def materialize(self, dest: Path, *, fixed: bool = False, cache: Path = CACHE_DIR) -> Path:
        """Copy the library tree to ``dest`` and inject the bug (unless ``fixed``: the unmodified tree)."""
        shutil.copytree(pristine_tree(self, cache), dest, ignore=_ignore, symlinks=True)
        if not fixed:
            target = dest / self.bug.path
            text = target.read_text(encoding="utf-8")
            target.write_text(apply_bug(text, self.bug), encoding="utf-8")
        return dest

    def python(self, cache: Path = CACHE_DIR) -> str:
        """Ours, or a cached venv with the pinned pytest (and selfix's coverage.py version)."""
        if not self.pytest:
            return sys.executable
        slug = re.sub(r"[^A-Za-z0-9.]+", "-", self.pytest).strip("-")
        return venv_python(cache / "envs" / slug, [self.pytest, coverage_requirement()])

    def test_command(self, python: str) -> tuple[str, ...]:
        return (python, "-m", "pytest")

    def reference_fix(self, cache: Path = CACHE_DIR) -> tuple[dict[str, str], dict[str, str]]:
        """The inverse splice: the bug's file as in the library, and as the bug left it."""
        original = (pristine_tree(self, cache) / self.bug.path).read_text(encoding="utf-8")
        return {self.bug.path: original}, {self.bug.path: apply_bug(original, self.bug)}

    def judge(self, files: Mapping[str, str], python: str, workdir: Path, cache: Path = CACHE_DIR) -> dict[str, Any]:
        """Resolved iff every F2P and P2P test passes on a fresh buggy copy + the edits + the original tests."""
        repo = self.materialize(workdir / "judge", cache=cache)
        for path, text in files.items():
            if is_under(path, self.test_paths):
                continue  # the tool's test edits never count
            target = (repo / path).resolve()
            if not target.is_relative_to(repo.resolve()):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        restore_tests(self, repo, cache)
        with PytestSandbox(repo, [python, "-m", "pytest"], limits=Limits(wall_seconds=JUDGE_WALL_SECONDS)) as box:
            run = box.run_tests([*self.f2p, *self.p2p])
        f2p_bad, p2p_bad = not_passed(run, self.f2p), not_passed(run, self.p2p)
        return {
            "resolved": not f2p_bad and not p2p_bad,
            "f2p_failing": len(f2p_bad),
            "p2p_failing": len(p2p_bad),
        }

    def unedited_verdict(self) -> dict[str, Any] | None:
        return None  # judged like any patch: the judge's run is the check that the bug still breaks F2P


def load_task(path: Path) -> Task:
    return task_from_data(read_task_data(path), path)


def task_from_data(data: Mapping[str, Any], path: Path) -> Task:
    try:
        return Task(
            id=data["id"],
            source=data["source"],
            bug=Bug(**data["bug"]),
            f2p=tuple(data["f2p"]),
            p2p=tuple(data["p2p"]),
            bug_report=data["bug_report"],
            test_paths=tuple(data["test_paths"]),
            pytest=data.get("pytest", ""),
            base_dir=str(path.parent.resolve()),
            meta=data.get("meta", {}),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"bad task file {path}: {exc}") from exc


def load_tasks(directory: Path) -> list[Task]:
    """Every mutant task of a directory (or one file)."""
    return load_folder(directory, load_task, lambda task: task.id)


# -- sources -------------------------------------------------------------------------------------------
def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_sdist(name: str, version: str, sha256: str | None = None, cache: Path = CACHE_DIR) -> Path:
    """The sdist from the cache, downloaded with pip when missing; its sha256 must match when pinned."""
    folder = cache / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    found = [p for p in folder.glob(f"{name}-{version}.*") if p.name.endswith((".tar.gz", ".zip"))]
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{name}=={version}",
                "-d",
                str(folder),
            ],
            check=True,
            timeout=PIP_TIMEOUT,
            capture_output=True,
        )
        found = [p for p in folder.glob(f"{name}-{version}.*") if p.name.endswith((".tar.gz", ".zip"))]
    if not found:
        raise InputError(f"pip did not fetch an sdist of {name}=={version}")
    path = found[0]
    if sha256 and sha256_of(path) != sha256:
        raise InputError(f"sha256 mismatch for {path.name}: the pinned sdist differs from the one fetched")
    return path


def pristine_tree(task: Task, cache: Path = CACHE_DIR) -> Path:
    """The unmodified library tree (extracted once into the cache, or the local source directory)."""
    source = task.source
    if source["kind"] == "dir":
        path = (Path(task.base_dir) / source["path"]).resolve()
        if not path.is_dir():
            raise InputError(f"task {task.id}: source directory not found: {path}")
        return path
    if source["kind"] != "sdist":
        raise InputError(f"task {task.id}: unknown source kind {source['kind']!r}")
    target = cache / "src" / f"{source['name']}-{source['version']}-{source['sha256'][:12]}"
    if (target / ".complete").exists():
        return target / source["root"]
    archive = fetch_sdist(source["name"], source["version"], source["sha256"], cache)
    tmp = Path(tempfile.mkdtemp(prefix="extract-", dir=cache))
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(target)
    (target / ".complete").write_text("ok\n")
    return target / source["root"]


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in ("__pycache__", ".pytest_cache", ".git") or n.endswith(".egg-info")}


def apply_bug(text: str, bug: Bug) -> str:
    if text[bug.start : bug.start + len(bug.original)] != bug.original:
        raise InputError(f"the bug's original text is not at offset {bug.start} of {bug.path}")
    return text[: bug.start] + bug.mutated + text[bug.start + len(bug.original) :]


def restore_tests(task: Task, repo: Path, cache: Path = CACHE_DIR) -> None:
    """Overwrite the repo's test files with the task's originals (whatever the tool did to them)."""
    pristine = pristine_tree(task, cache)
    for rel in task.test_paths:
        src, dst = pristine / rel, repo / rel
        if dst.is_dir():
            shutil.rmtree(dst)
        elif dst.exists():
            dst.unlink()
        if src.is_dir():
            shutil.copytree(src, dst, ignore=_ignore)
        elif src.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


# -- leak check ----------------------------------------------------------------------------------------
def leak_reasons(report: str, bug: Bug, buggy_source: str) -> list[str]:
    """Why ``report`` gives the bug's location or code away (empty: it does not)."""
    reasons = []
    module = Path(bug.path)
    for name in {bug.path, module.name}:
        if re.search(rf"(?<![\w/.]){re.escape(name)}", report):
            reasons.append(f"names the file {name}")
    dotted = ".".join(module.with_suffix("").parts)
    if len(module.parts) > 1 and re.search(rf"(?<![\w.]){re.escape(dotted)}(?![\w])", report):
        reasons.append(f"names the module {dotted}")
    if re.search(rf"(?:line\s+|:){bug.line}(?!\d)", report):
        reasons.append(f"names line {bug.line}")
    lines = buggy_source.splitlines()
    if 1 <= bug.line <= len(lines):
        code = lines[bug.line - 1].strip()
        if len(code) >= 8 and code in report:
            reasons.append("quotes the changed line")
    for snippet in (bug.mutated.strip(), bug.original.strip()):
        if len(snippet) >= 12 and snippet in report:
            reasons.append(f"quotes the changed code {snippet!r}")
    return reasons
