"""Real-bug benchmark tasks: historical bugs of open-source projects, rebuilt from their git history at run time.

A task file (``bench/realbugs/tasks/<project>-<n>.json``, ``"kind": "realbug"``) names the project's public git URL,
the buggy and the fixed commit, which changed paths are the developers' *test change* and which their *fix*, the
developers' new failing tests (F2P), the tests of the same files that pass before and after (P2P), the *hidden*
tests (other test files of the fixed commit that exercise the fixed modules; the tool never runs them) and the
pinned requirements of the project's test environment. No third-party source is stored: every tree is rebuilt
from the history (a local mirror given by ``--mirror-dir`` or the public URL), cached under ``~/.cache``.

The tool sees the buggy commit plus the developers' test change, never the fix. A patch is scored three ways:
**resolved** (every F2P and P2P test passes with it), **correct** (resolved, and either the same normalized syntax
tree as the developers' fix in every function either side changed, or it passes the hidden tests too), and
**plausible-but-wrong** (resolved, not correct).

    python -m selfix_bench.realbugs build --bugsinpy DIR --project black --mirror-dir DIR --out DIR
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import re
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfix_action.errors import InputError
from selfix_action.repair.values import TestRun
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.base import CACHE_DIR, coverage_requirement, is_under, not_passed, passed, venv_python
from selfix_bench.gittrees import changed_paths, file_at
from selfix_bench.gittrees import git as _git
from selfix_bench.gittrees import overlay as _overlay

KIND = "realbug"
SCHEMA = 1
GIT_TIMEOUT = 600
# pytest 7.4 runs on Python 3.11 and still accepts the old projects' conftest hooks; the projects' own pins
# (pytest 3-5) do not run on 3.11. Recorded in every task's requirements.
PYTEST_PIN = "pytest==7.4.4"
VALIDATION_WALL_SECONDS = 300.0
HIDDEN_MAX_FILES = 2
# ``changelogs/``: ansible's release-note fragments (``changelogs/fragments/*.yml``), which every fix adds.
DOC_NAMES = ("CHANGES", "CHANGELOG", "HISTORY", "README", "AUTHORS", "docs/", ".github/", "NEWS", "changelogs/")

# Where git trees come from: a folder of local mirrors (``--mirror-dir``), else the public URL. Set per process.
_mirror_dir: Path | None = None


def set_mirror_dir(path: Path | None) -> None:
    global _mirror_dir
    _mirror_dir = path


@dataclass(frozen=True)
class RealBugTask:
    id: str
    project: str
    source: dict[str, Any]  # {"kind": "git", "name", "url", "buggy_commit", "fixed_commit"}
    fix_paths: tuple[str, ...]  # the developers' fix: these paths as in the fixed commit
    test_paths: tuple[str, ...]  # the developers' test change: these paths as in the fixed commit
    test_modules: tuple[str, ...]  # the test files the tool's test command runs (the changed test modules)
    f2p: tuple[str, ...]
    p2p: tuple[str, ...]
    hidden: tuple[str, ...]  # tests of other test files of the fixed commit that pass with the fix
    hidden_paths: tuple[str, ...]
    requirements: tuple[str, ...]
    bug_report: str
    fix_lines: int = 0  # changed lines (added + removed) of the developers' fix
    base_dir: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def fix_kind(self) -> str:
        return "single-line" if self.fix_lines <= 2 else "multi-line"

    def to_json(self) -> str:
        data = {
            "schema": SCHEMA,
            "kind": KIND,
            "id": self.id,
            "project": self.project,
            "source": self.source,
            "fix_paths": list(self.fix_paths),
            "test_paths": list(self.test_paths),
            "test_modules": list(self.test_modules),
            "f2p": list(self.f2p),
            "p2p": list(self.p2p),
            "hidden": list(self.hidden),
            "hidden_paths": list(self.hidden_paths),
            "requirements": list(self.requirements),
            "bug_report": self.bug_report,
            "fix_lines": self.fix_lines,
            "meta": self.meta,
        }
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    # -- the BenchTask protocol (base.py) --------------------------------------------------------------
    @property
    def kind(self) -> str:
        return KIND

    @property
    def library(self) -> str:
        return self.project

    @property
    def family(self) -> str:
        return self.fix_kind

    def materialize(self, dest: Path, *, fixed: bool = False, cache: Path = CACHE_DIR) -> Path:
        """The buggy commit plus the developers' test change (and their fix when ``fixed``) at ``dest``."""
        bare = git_cache(self.source, cache)
        export_tree(bare, self.source["buggy_commit"], dest)
        _overlay(bare, self.source["fixed_commit"], self.test_paths, dest)
        if fixed:
            _overlay(bare, self.source["fixed_commit"], self.fix_paths, dest)
        # Files an install step would generate (black's ``_black_version.py`` from setuptools-scm), where absent.
        for rel, text in self.meta.get("generated_files", {}).items():
            if not (dest / rel).exists():
                (dest / rel).write_text(text, encoding="utf-8")
        return dest

    def python(self, cache: Path = CACHE_DIR) -> str:
        if not self.requirements:
            return sys.executable  # a task of the tests' own making: the running interpreter's pytest
        return env_python(self.requirements, cache)

    def test_command(self, python: str) -> tuple[str, ...]:
        """The changed test modules: what the developers' test change brings."""
        return (python, "-m", "pytest", *self.test_modules)

    def reference_fix(self, cache: Path = CACHE_DIR) -> tuple[dict[str, str], dict[str, str]]:
        """The developers' fix as (fixed files, buggy originals), text by repo-relative path (a file the fix
        deletes is "")."""
        bare = git_cache(self.source, cache)
        fixed, originals = {}, {}
        for rel in self.fix_paths:
            after = file_at(bare, self.source["fixed_commit"], rel)
            before = file_at(bare, self.source["buggy_commit"], rel)
            fixed[rel] = after.decode("utf-8", errors="replace") if after is not None else ""
            originals[rel] = before.decode("utf-8", errors="replace") if before is not None else ""
        return fixed, originals

    def judge(self, files: Mapping[str, str], python: str, workdir: Path, cache: Path = CACHE_DIR) -> dict[str, Any]:
        return judge(self, files, python, workdir, cache)

    def unedited_verdict(self) -> dict[str, Any] | None:
        """The buggy tree, on which the build saw every F2P test fail twice: no run needed."""
        return {
            "resolved": False,
            "correct": False,
            "plausible_wrong": False,
            "correct_ast": False,
            "correct_tests": False,
            "f2p_failing": len(self.f2p),
            "p2p_failing": 0,
            "edited_files": [],
        }


def is_realbug_file(data: Mapping[str, Any]) -> bool:
    return data.get("kind") == KIND


def task_from_data(data: Mapping[str, Any], base_dir: str) -> RealBugTask:
    return RealBugTask(
        id=data["id"],
        project=data["project"],
        source=dict(data["source"]),
        fix_paths=tuple(data["fix_paths"]),
        test_paths=tuple(data["test_paths"]),
        test_modules=tuple(data["test_modules"]),
        f2p=tuple(data["f2p"]),
        p2p=tuple(data["p2p"]),
        hidden=tuple(data.get("hidden", ())),
        hidden_paths=tuple(data.get("hidden_paths", ())),
        requirements=tuple(data.get("requirements", ())),
        bug_report=data.get("bug_report", ""),
        fix_lines=int(data.get("fix_lines", 0)),
        base_dir=base_dir,
        meta=dict(data.get("meta", {})),
    )


# -- git -----------------------------------------------------------------------------------------------
def _slug(url: str) -> tuple[str, str]:
    """owner and name of a repository URL (``https://github.com/psf/black`` -> ``psf``, ``black``)."""
    parts = [p for p in re.split(r"[/:]", url.removesuffix("/").removesuffix(".git")) if p]
    if len(parts) < 2:
        raise InputError(f"not a repository URL: {url}")
    return parts[-2], parts[-1]


def mirror_for(url: str, mirror_dir: Path | None) -> str:
    """The local mirror of ``url`` in ``mirror_dir`` (``owner+name/repo``, ``owner+name``, ``name.git`` or
    ``name``), else the URL itself."""
    if mirror_dir is not None:
        owner, name = _slug(url)
        for candidate in (
            mirror_dir / f"{owner}+{name}" / "repo",
            mirror_dir / f"{owner}+{name}",
            mirror_dir / f"{name}.git",
            mirror_dir / name,
        ):
            if (candidate / "HEAD").exists() or (candidate / ".git").exists():
                return str(candidate)
    return url


def git_cache(source: Mapping[str, Any], cache: Path = CACHE_DIR) -> Path:
    """A bare clone of the task's repository in the cache, holding both pinned commits."""
    owner, name = _slug(source["url"])
    bare = cache / "git" / f"{owner}+{name}.git"
    commits = [source["buggy_commit"], source["fixed_commit"]]
    if not (bare / ".complete").exists():
        shutil.rmtree(bare, ignore_errors=True)
        bare.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=bare.parent))
        _git(["clone", "--bare", "--quiet", mirror_for(source["url"], _mirror_dir), str(tmp / "repo.git")])
        (tmp / "repo.git").rename(bare)
        shutil.rmtree(tmp, ignore_errors=True)
        (bare / ".complete").write_text("ok\n")
    for commit in commits:
        try:
            _git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=bare)
        except InputError:
            _git(["fetch", "--quiet", mirror_for(source["url"], _mirror_dir), commit], cwd=bare)
    return bare


def export_tree(bare: Path, commit: str, dest: Path, exclude: Sequence[str] = ()) -> Path:
    """The tree of ``commit`` written to ``dest`` (no .git: the tool gets a plain checkout), but the paths of
    ``exclude`` (a mirror without a project's large files cannot export them)."""
    pathspec = [".", *(f":(exclude){path}" for path in exclude)] if exclude else []
    data = _git(["archive", "--format=tar", commit, *pathspec], cwd=bare)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def fix_line_count(bare: Path, buggy: str, fixed: str, paths: Sequence[str]) -> int:
    if not paths:
        return 0
    out = _git(["diff", "--numstat", "--no-renames", buggy, fixed, "--", *paths], cwd=bare).decode()
    total = 0
    for line in out.splitlines():
        added, removed, _ = line.split("\t", 2)
        total += int(added) + int(removed) if added.isdigit() and removed.isdigit() else 0
    return total


# -- trees ---------------------------------------------------------------------------------------------
# -- the test environment ------------------------------------------------------------------------------
# Python 3.11 removed names the old projects use (``collections.Mapping`` & co., ``inspect.ArgSpec`` and
# ``getargspec``: luigi's vendored six, tornado 4). The venv restores them at start-up (a ``.pth`` line), so the
# projects' own code runs unchanged; this is the environment, not the code under test.
COMPAT_SHIM = (
    'import sys; exec("import collections, collections.abc, inspect\\n'
    "for _n in collections.abc.__all__:\\n"
    "    collections.__dict__.setdefault(_n, getattr(collections.abc, _n))\\n"
    "if not hasattr(inspect, 'ArgSpec'):\\n"
    "    inspect.ArgSpec = collections.namedtuple('ArgSpec', 'args varargs keywords defaults')\\n"
    '    inspect.getargspec = lambda f: inspect.ArgSpec(*inspect.getfullargspec(f)[:4])\\n", {})\n'
)
COMPAT_SHIM_NAME = "selfix_realbug_compat.pth"


def env_python(requirements: Sequence[str], cache: Path = CACHE_DIR) -> str:
    """A cached venv with the pinned requirements (pytest, and selfix's coverage.py version for its collector)
    and the start-up shim."""
    wanted = sorted({*requirements, coverage_requirement()})
    digest = hashlib.sha256("\n".join([*wanted, COMPAT_SHIM]).encode()).hexdigest()[:12]
    return venv_python(cache / "envs" / f"realbug-{digest}", wanted, {COMPAT_SHIM_NAME: COMPAT_SHIM})


def run_tests(
    repo: Path,
    python: str,
    test_modules: Sequence[str],
    nodeids: Sequence[str] | None,
    wall: float = VALIDATION_WALL_SECONDS,
) -> TestRun:
    """One clean pytest run in the sandbox on ``repo`` (the given tests, or every test of ``test_modules``)."""
    with PytestSandbox(
        repo, [python, "-m", "pytest", *test_modules], limits=Limits(wall_seconds=wall), hot=False
    ) as box:
        return box.run_tests(list(nodeids) if nodeids is not None else None)


# -- normalized syntax trees ---------------------------------------------------------------------------
class _StripDocstrings(ast.NodeTransformer):
    def _strip(self, node: ast.AST) -> ast.AST:
        self.generic_visit(node)
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
        return node

    visit_Module = visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _strip

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        """``not a is b`` -> ``a is not b``, ``not a in b`` -> ``a not in b``: one tree for one meaning."""
        self.generic_visit(node)
        negated = {ast.Is: ast.IsNot, ast.In: ast.NotIn}
        operand = node.operand
        if isinstance(node.op, ast.Not) and isinstance(operand, ast.Compare) and len(operand.ops) == 1:
            flipped = negated.get(type(operand.ops[0]))
            if flipped is not None:
                return ast.Compare(left=operand.left, ops=[flipped()], comparators=operand.comparators)
        return node


def code_units(source: str) -> dict[str, str]:
    """Normalized ``ast.dump`` of every function and class by qualified name, plus ``<module>`` for the module's
    own statements (docstrings dropped; line numbers, comments and formatting never part of a dump)."""
    tree = _StripDocstrings().visit(ast.parse(source))
    units: dict[str, str] = {}
    top: list[ast.stmt] = []

    def walk(body: Sequence[ast.stmt], prefix: str, collect: list[ast.stmt] | None) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{node.name}"
                units[name] = ast.dump(node, include_attributes=False)
                walk(node.body, f"{name}.", None)
            elif collect is not None:
                collect.append(node)

    walk(tree.body, "", top)
    units["<module>"] = ast.dump(ast.Module(body=top, type_ignores=[]), include_attributes=False)
    return units


@dataclass(frozen=True)
class AstVerdict:
    same: bool
    changed: tuple[str, ...]  # "path::qualname" changed by the tool or the developers
    differing: tuple[str, ...]  # of those, where the tool's tree differs from the developers'
    reason: str = ""


def compare_to_fix(
    tool_files: Mapping[str, str], dev_files: Mapping[str, str], buggy_files: Mapping[str, str]
) -> AstVerdict:
    """Same normalized syntax tree as the developers' fix in every function either side changed?

    ``tool_files`` / ``dev_files``: the files each side changed (text); ``buggy_files``: the buggy text of every
    path in either (a path missing there is a new file). Non-Python files must match line for line."""
    changed: list[str] = []
    differing: list[str] = []
    for path in sorted(set(tool_files) | set(dev_files)):
        buggy = buggy_files.get(path, "")
        tool = tool_files.get(path, buggy)
        dev = dev_files.get(path, buggy)
        if not path.endswith(".py"):
            if tool.split() != dev.split():
                changed.append(path)
                differing.append(path)
            elif tool.split() != buggy.split():
                changed.append(path)
            continue
        try:
            units = [code_units(text) if text else {} for text in (buggy, tool, dev)]
        except SyntaxError as exc:
            return AstVerdict(False, tuple(changed), (*differing, path), f"{path} does not parse: {exc.msg}")
        before, mine, theirs = units
        for name in sorted(set(before) | set(mine) | set(theirs)):
            if mine.get(name) == before.get(name) and theirs.get(name) == before.get(name):
                continue
            changed.append(f"{path}::{name}")
            if mine.get(name) != theirs.get(name):
                differing.append(f"{path}::{name}")
    return AstVerdict(not differing, tuple(changed), tuple(differing))


# -- judging -------------------------------------------------------------------------------------------
def judge(
    task: RealBugTask, files: Mapping[str, str], python: str, workdir: Path, cache: Path = CACHE_DIR
) -> dict[str, Any]:
    """resolved / correct / plausible_wrong for the tool's edited files, judged on fresh trees, never the tool's."""
    repo = task.materialize(workdir / "judge", cache=cache)
    test_dirs = tuple(task.meta.get("test_dirs", ()))
    edits: dict[str, str] = {}
    buggy: dict[str, str] = {}
    for path, text in files.items():
        if path in task.test_paths or is_under(path, test_dirs):
            continue  # the tool's test edits never count
        target = (repo / path).resolve()
        if not target.is_relative_to(repo.resolve()):
            continue
        buggy[path] = target.read_text(encoding="utf-8", errors="replace") if target.exists() else ""
        if text == buggy[path]:
            continue
        edits[path] = text
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    run = run_tests(repo, python, task.test_modules, [*task.f2p, *task.p2p])
    f2p_bad, p2p_bad = not_passed(run, task.f2p), not_passed(run, task.p2p)
    resolved = not f2p_bad and not p2p_bad
    dev_files, dev_originals = task.reference_fix(cache)
    verdict = compare_to_fix(edits, dev_files, {**dev_originals, **buggy})
    hidden_bad: list[str] | None = None
    if resolved and task.hidden and set(edits) <= set(task.fix_paths):
        hidden_run = run_tests(repo, python, task.hidden_paths, task.hidden)
        hidden_bad = not_passed(hidden_run, task.hidden)
    # Hidden tests vouch only for a patch confined to the files the developers fixed: a patch elsewhere can gut
    # shared test machinery (seen: tornado's ``gen_test`` made to skip the coroutine), so every test "passes".
    confined = set(edits) <= set(task.fix_paths)
    correct_tests = hidden_bad is not None and not hidden_bad and confined
    correct = resolved and (verdict.same or correct_tests)
    return {
        "resolved": resolved,
        "correct": correct,
        "plausible_wrong": resolved and not correct,
        "correct_ast": resolved and verdict.same,
        "correct_tests": correct_tests,
        "ast_differs": list(verdict.differing)[:10],
        "f2p_failing": len(f2p_bad),
        "p2p_failing": len(p2p_bad),
        "hidden_failing": len(hidden_bad) if hidden_bad is not None else None,
        "outside_fix_files": sorted(set(edits) - set(task.fix_paths)),
        "edited_files": sorted(edits),
    }


# -- building and validating tasks ---------------------------------------------------------------------
def is_test_path(path: str, test_dirs: Sequence[str], listed: Sequence[str] = ()) -> bool:
    name = Path(path).name
    return (
        path in listed
        or is_under(path, test_dirs)
        or name.startswith("test_")
        or name.endswith("_test.py")
        or "/tests/" in f"/{path}"
    )


def is_doc_path(path: str) -> bool:
    """Documentation and top-level project files (changelog, tox.ini, CI): never part of the fix."""
    return (
        path.endswith((".md", ".rst")) or ("/" not in path and not path.endswith(".py")) or path.startswith(DOC_NAMES)
    )


def _is_test_module(path: str) -> bool:
    name = Path(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py") or name == "tests.py")


def _modules_of(paths: Iterable[str]) -> set[str]:
    """Importable names a test that exercises these source files would mention (``black``, ``tornado.web``)."""
    names = set()
    for path in paths:
        if path.endswith(".py"):
            parts = Path(path).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts:
                names.add(".".join(parts))
    return names


def _hidden_candidates(
    bare: Path, fixed: str, test_dirs: Sequence[str], exclude: Iterable[str], fix_paths: Sequence[str]
) -> list[str]:
    """Other test modules of the fixed commit that import a module the fix changed (most mentions first)."""
    listing = _git(["ls-tree", "-r", "--name-only", fixed], cwd=bare).decode().splitlines()
    modules = _modules_of(fix_paths)
    scored = []
    for path in listing:
        if path in exclude or not _is_test_module(path) or not is_under(path, test_dirs):
            continue
        text = (file_at(bare, fixed, path) or b"").decode("utf-8", errors="replace")
        hits = 0
        for module in modules:
            last = module.rsplit(".", 1)[-1]
            hits += len(re.findall(rf"(?:import|from)\s+[\w.]*\b{re.escape(last)}\b", text))
        if hits:
            scored.append((-hits, path))
    return [p for _, p in sorted(scored)[:HIDDEN_MAX_FILES]]


def bug_report_for(f2p: Sequence[str], run: TestRun) -> str:
    lines = [f"{len(f2p)} test(s) the developers added or changed fail:", ""]
    for nodeid in f2p:
        result = run.results.get(nodeid)
        kind = result.exc_type if result is not None and result.exc_type else "failed"
        lines.append(f"- `{nodeid}`: {kind}")
    return "\n".join(lines) + "\n"


@dataclass
class BuildOutcome:
    task: RealBugTask | None
    reason: str  # why it was dropped ("" when kept)
    seconds: float


def build_task(
    project: str,
    number: int,
    url: str,
    buggy: str,
    fixed: str,
    requirements: Sequence[str] | None,
    test_dirs: Sequence[str],
    listed_tests: Sequence[str] = (),
    generated_files: Mapping[str, str] | None = None,
    cache: Path = CACHE_DIR,
    log: Callable[[str], None] = lambda m: None,
) -> BuildOutcome:
    """Rebuild one bug, run the changed test modules on buggy and fixed trees, and keep it if it validates:
    some test fails on the buggy commit + test change (twice) and passes with the fix."""
    started = time.monotonic()
    task_id = f"{project}-{number}"
    source = {"kind": "git", "name": project, "url": url, "buggy_commit": buggy, "fixed_commit": fixed}

    def dropped(reason: str) -> BuildOutcome:
        log(f"{task_id}: dropped: {reason}")
        return BuildOutcome(None, reason, round(time.monotonic() - started, 1))

    bare = git_cache(source, cache)
    paths = changed_paths(bare, buggy, fixed)
    test_paths = tuple(p for p in paths if is_test_path(p, test_dirs, listed_tests))
    fix_paths = tuple(p for p in paths if p not in test_paths and not is_doc_path(p))
    if not any(p.endswith(".py") for p in fix_paths):
        return dropped(f"the fix changes no Python source ({', '.join(paths[:4])})")
    test_modules = tuple(p for p in test_paths if _is_test_module(p) and file_at(bare, fixed, p) is not None)
    if not test_modules:
        return dropped("the test change has no test module pytest collects")
    # None: the running interpreter's own pytest (tasks of the tests' own making; nothing to install).
    pinned = () if requirements is None else (PYTEST_PIN, *requirements)
    python = env_python(pinned, cache) if pinned else sys.executable
    draft = RealBugTask(
        id=task_id,
        project=project,
        source=source,
        fix_paths=fix_paths,
        test_paths=test_paths,
        test_modules=test_modules,
        f2p=(),
        p2p=(),
        hidden=(),
        hidden_paths=(),
        requirements=pinned,
        bug_report="",
        fix_lines=fix_line_count(bare, buggy, fixed, [p for p in fix_paths if p.endswith(".py")]),
        meta={"test_dirs": list(test_dirs), "generated_files": dict(generated_files or {})},
    )
    with tempfile.TemporaryDirectory(prefix="selfix-realbug-") as tmp:
        buggy_repo = draft.materialize(Path(tmp) / "buggy", cache=cache)
        fixed_repo = draft.materialize(Path(tmp) / "fixed", fixed=True, cache=cache)
        before = run_tests(buggy_repo, python, test_modules, None)
        after = run_tests(fixed_repo, python, test_modules, None)
        if after.error and not after.results:
            return dropped(f"the fixed commit's tests do not run: {after.error}")
        good_after = passed(after)
        f2p = sorted(n for n in good_after if n in before.results and n not in passed(before))
        f2p += sorted(n for n in good_after if n not in before.results and before.results)  # new tests that error
        f2p = sorted(set(f2p))
        p2p = sorted(passed(before) & good_after)
        if not f2p:
            return dropped(
                f"no test fails on the buggy commit and passes with the fix ({len(good_after)} pass after,"
                f" {len(passed(before))} before{'; ' + before.error if before.error else ''})"
            )
        # The failing tests once more on the buggy tree: a test that passes now is unstable, not the bug's.
        again = run_tests(buggy_repo, python, test_modules, f2p)
        f2p = [n for n in f2p if n in set(not_passed(again, f2p))]
        if not f2p:
            return dropped("the failing tests are unstable (a second run on the buggy tree passes them)")
        hidden_paths = _hidden_candidates(bare, fixed, test_dirs, test_paths, fix_paths)
        hidden: list[str] = []
        if hidden_paths:
            hidden_run = run_tests(fixed_repo, python, hidden_paths, None)
            hidden = sorted(passed(hidden_run))
            hidden_paths = [p for p in hidden_paths if any(n.startswith(p + "::") for n in hidden)]
        report = bug_report_for(f2p, before)
    listed = [t for t in listed_tests if t.endswith(".py")]
    task = RealBugTask(
        **{
            **draft.__dict__,
            "f2p": tuple(f2p),
            "p2p": tuple(p2p),
            "hidden": tuple(hidden),
            "hidden_paths": tuple(hidden_paths),
            "bug_report": report,
            "meta": {
                **draft.meta,
                "bugsinpy": f"{project}/{number}",
                "bugsinpy_test_files": listed,
                "validated_seconds": round(time.monotonic() - started, 1),
            },
        },
    )
    log(f"{task_id}: kept: {len(f2p)} F2P, {len(p2p)} P2P, {len(hidden)} hidden, fix {draft.fix_lines} line(s)")
    return BuildOutcome(task, "", round(time.monotonic() - started, 1))


def read_bugsinpy_info(path: Path) -> dict[str, str]:
    """``bug.info`` / ``project.info``: shell-style ``key="value"`` lines."""
    info = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            info[key.strip()] = value.strip().strip('"').strip()
    return info


EXCLUDED_PROJECTS = frozenset({"thefuck", "youtube-dl", "tqdm", "PySnooper", "cookiecutter"})


def build_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.realbugs build")
    parser.add_argument("--bugsinpy", type=Path, required=True, help="a checkout of soarsmu/BugsInPy")
    parser.add_argument("--projects", type=Path, default=Path("bench/realbugs/projects.json"))
    parser.add_argument("--project", action="append", required=True)
    parser.add_argument("--bugs", default="", help="bug numbers, e.g. 1-10,12 (default: all)")
    parser.add_argument("--mirror-dir", type=Path)
    parser.add_argument("--out", type=Path, default=Path("bench/realbugs/tasks"))
    parser.add_argument("--log", type=Path, default=Path("bench/realbugs/build-log.jsonl"))
    args = parser.parse_args(argv)
    set_mirror_dir(args.mirror_dir)
    projects = json.loads(args.projects.read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    wanted: set[int] = set()
    for part in filter(None, args.bugs.split(",")):
        low, _, high = part.partition("-")
        wanted.update(range(int(low), int(high or low) + 1))
    for project in args.project:
        if project in EXCLUDED_PROJECTS:
            raise InputError(f"{project} is kept aside for an independent check")
        config = projects[project]
        bugs_dir = args.bugsinpy / "projects" / project / "bugs"
        numbers = sorted(int(p.name) for p in bugs_dir.iterdir() if p.name.isdigit())
        logged = set()
        if args.log.exists():
            logged = {json.loads(line)["id"] for line in args.log.read_text(encoding="utf-8").splitlines() if line}
        for number in numbers:
            if wanted and number not in wanted:
                continue
            if (args.out / f"{project}-{number}.json").exists() or f"{project}-{number}" in logged:
                continue
            info = read_bugsinpy_info(bugs_dir / str(number) / "bug.info")
            listed = [t.strip() for t in info.get("test_file", "").split(";") if t.strip()]
            try:
                outcome = build_task(
                    project,
                    number,
                    config["url"],
                    info["buggy_commit_id"],
                    info["fixed_commit_id"],
                    config["requirements"],
                    config["test_dirs"],
                    listed,
                    config.get("generated_files"),
                    log=lambda m: print(m, flush=True),
                )
            except Exception as exc:  # one bug's trouble (git, pip, a suite that cannot start) drops that bug only
                outcome = BuildOutcome(None, f"error: {exc}"[:400], 0.0)
                print(f"{project}-{number}: dropped: {outcome.reason}", flush=True)
            if outcome.task is not None:
                (args.out / f"{outcome.task.id}.json").write_text(outcome.task.to_json(), encoding="utf-8")
            with open(args.log, "a", encoding="utf-8") as handle:
                handle.write(
                    json.dumps(
                        {
                            "id": f"{project}-{number}",
                            "kept": outcome.task is not None,
                            "reason": outcome.reason,
                            "seconds": outcome.seconds,
                        }
                    )
                    + "\n"
                )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "build":
        sys.exit(build_main(sys.argv[2:]))
    sys.exit("usage: python -m selfix_bench.realbugs build --bugsinpy DIR --project NAME ...")
