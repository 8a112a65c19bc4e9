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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfix_action.errors import InputError

if TYPE_CHECKING:
    from selfix_bench.realbugs import RealBugTask

CACHE_DIR = Path.home() / ".cache" / "selfix-bench"
SCHEMA = 1
PIP_TIMEOUT = 300


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


def load_task(path: Path) -> Task:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
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
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"bad task file {path}: {exc}") from exc


def load_tasks(directory: Path) -> list[Task]:
    if directory.is_file():
        return [load_task(directory)]
    files = sorted(directory.glob("*.json"))
    if not files:
        raise InputError(f"no task files (*.json) in {directory}")
    tasks = [load_task(p) for p in files]
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InputError(f"duplicate task ids in {directory}")
    return tasks


def load_bench_task(path: Path) -> Task | RealBugTask:
    """A mutant task, or a real-bug task (``"kind": "realbug"``, see ``realbugs.py``)."""
    from selfix_bench import realbugs

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"bad task file {path}: {exc}") from exc
    if isinstance(data, dict) and realbugs.is_realbug_file(data):
        try:
            return realbugs.task_from_data(data, str(path.parent.resolve()))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"bad real-bug task file {path}: {exc}") from exc
    return load_task(path)


def load_bench_tasks(directory: Path) -> list[Task | RealBugTask]:
    """Every task of a directory (or one file), of either kind; ids must be unique."""
    if directory.is_file():
        return [load_bench_task(directory)]
    files = sorted(directory.glob("*.json"))
    if not files:
        raise InputError(f"no task files (*.json) in {directory}")
    tasks = [load_bench_task(p) for p in files]
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InputError(f"duplicate task ids in {directory}")
    return tasks


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


def reference_fix(task: Task, buggy_text: str) -> str:
    """The buggy file with the inverse splice applied: the original source."""
    inverse = Bug(task.bug.path, task.bug.line, task.bug.start, task.bug.mutated, task.bug.original)
    return apply_bug(buggy_text, inverse)


def materialize(task: Task, dest: Path, *, buggy: bool = True, cache: Path = CACHE_DIR) -> Path:
    """Copy the library tree to ``dest`` and inject the bug (unless ``buggy`` is False)."""
    shutil.copytree(pristine_tree(task, cache), dest, ignore=_ignore, symlinks=True)
    if buggy:
        target = dest / task.bug.path
        text = target.read_text(encoding="utf-8")
        target.write_text(apply_bug(text, task.bug), encoding="utf-8")
    return dest


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


def test_python(task: Task, cache: Path = CACHE_DIR) -> str:
    """The interpreter that runs the task's tests: ours, or a cached venv with the pinned pytest."""
    if not task.pytest:
        return sys.executable
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", task.pytest).strip("-")
    env = cache / "envs" / slug
    python = env / "bin" / "python"
    if not (env / ".complete").exists():
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=PIP_TIMEOUT)
        import coverage

        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", task.pytest, f"coverage=={coverage.__version__}"],
            check=True,
            timeout=PIP_TIMEOUT,
            capture_output=True,
        )
        (env / ".complete").write_text("ok\n")
    return str(python)


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
