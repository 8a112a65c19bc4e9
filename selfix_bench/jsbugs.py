"""Real JavaScript bugs from BugsJS, rebuilt offline and healed through the product (issue 34).

BugsJS keeps each bug as git tags in its fork of the project (``github.com/BugsJS/<project>``): ``Bug-N`` (buggy),
``Bug-N-test`` (Bug-N + the developers' test change), ``Bug-N-fix`` (Bug-N + their cleaned fix) and ``Bug-N-full``
(both); every one of the three is a single commit on top of ``Bug-N``. A task file
(``bench/jsbugs/tasks/<project>-<n>.json``, ``"kind": "jsbug"``) names the fork, the four commits, the test command
(mocha, as an argv list without a reporter), the install recipe and the versions it installed, and the tests the
build saw: F2P (fail on Bug-N + tests, pass with the fix), P2P (pass on both) and the environment failures (fail
on both, left out). No third-party source is stored: trees come from the fork's history (``--mirror-dir`` or the
public URL) and ``node_modules`` is installed once from the npm registry and cached under
``~/.cache/selfix-bench/jsbugs/<task>/``.

The project's tests run only through the product's sandbox runner (``sandbox.process.run_process``); git and npm
are the benchmark's install steps (subprocesses with timeouts, as ``realbugs`` runs git and pip).

    python -m selfix_bench.jsbugs build --mirror-dir DIR --out bench/jsbugs/tasks [--bugs Hessian.js-1,Hexo-3]
    python -m selfix_bench.jsbugs heal --tasks bench/jsbugs/tasks --out DIR [--engine openai --base-url URL ...]
    python -m selfix_bench.jsbugs report DIR
    python -m selfix_bench.jsbugs check --tasks bench/jsbugs/tasks   # the developers' fix judged right, offline
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from selfix_action.commands.engine_args import ENGINE_KINDS, add_llm_arguments, engine_choice
from selfix_action.commands.fix_cmd import FixOptions, fix_request
from selfix_action.errors import InputError, SandboxError
from selfix_action.heal import EngineChoice
from selfix_action.repair.differential import probe_targets, untested_callers
from selfix_action.repair.patches import apply_unified_diff
from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.node_sandbox import NodeSandbox
from selfix_action.sandbox.process import Limits, run_process, sandbox_env
from selfix_action.toolchains.node import NodeProject
from selfix_bench.base import CACHE_DIR, load_folder, patch_digest, read_task_data
from selfix_bench.gittrees import changed_paths, file_at, git, overlay
from selfix_bench.healing import heal_with
from selfix_bench.stats import paired_comparison, wilson_interval

KIND = "jsbug"
SCHEMA = 1
GIT_TIMEOUT = 600
NPM_TIMEOUT = 900
COPY_TIMEOUT = 600
TEST_WALL_SECONDS = 300.0
NPM_FLAGS = ("--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
RETRY_FLAGS = ("--legacy-peer-deps",)  # npm >= 7 refuses the old projects' peer conflicts (ERESOLVE)
# Files of a fix that are not its source: the manifest (installed from Bug-N-full anyway) and documentation.
NOT_SOURCE = ("package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock")
DOC_SUFFIXES = (".md", ".markdown", ".txt", ".rst")

# The projects: their fork, how their CI runs mocha (the reporter comes from ``ci_report``), and which tests the
# task's command runs. "changed": the test files the developers' test change touched (BugsJS's bug-revealing
# tests live there): ESLint (its whole suite runs for minutes) and Pencilblue; "suite": the project's own command
# (its ``npm test``): Hessian.js (seconds) and Hexo (every test loads through test/index.js, so a file cannot be
# picked). The suite brings the environment failures of Node 20 into the report, as the project's CI would.
PROJECTS: dict[str, dict[str, Any]] = {
    "Hessian.js": {
        "repo": "BugsJS/hessian.js",
        "runner": ["node_modules/.bin/mocha", "-t", "15000", "-r", "should"],
        "scope": "suite",
        "suite": ["test/*.test.js"],
        "test_files": r"^test/.*\.test\.js$",
    },
    "Hexo": {
        "repo": "BugsJS/hexo",
        "runner": ["node_modules/.bin/_mocha"],
        "scope": "suite",
        "suite": ["test/index.js"],
        "test_files": r"^test/",
    },
    "ESLint": {
        "repo": "BugsJS/eslint",
        "runner": ["node_modules/.bin/_mocha", "-t", "10000"],
        "scope": "changed",
        "suite": ["tests/lib/**/*.js"],
        "test_files": r"^tests/lib/.*\.js$",
    },
    "Pencilblue": {
        "repo": "BugsJS/pencilblue",
        "runner": ["node_modules/mocha/bin/_mocha"],
        "scope": "changed",
        "suite": ["--recursive", "./test"],
        "test_files": r"^test/.*\.js$",
    },
}

# The 20 bugs (the survey's suggestion: docs/research/bugsjs-survey.md, section 5), then spares of the same
# projects tried in order when one does not validate.
DEFAULT_BUGS = (
    "Hessian.js-1 Hessian.js-2 Hessian.js-4 Hessian.js-5 Hessian.js-7 Hessian.js-8 Hessian.js-9 "
    "Hexo-3 Hexo-5 Hexo-7 Hexo-8 Hexo-11 Hexo-12 "
    "ESLint-1 ESLint-21 ESLint-50 ESLint-258 ESLint-275 "
    "Pencilblue-1 Pencilblue-6"
).split()
SPARES = (
    "Hessian.js-6 Hessian.js-3 Hexo-4 Hexo-6 Hexo-9 Hexo-2 ESLint-8 ESLint-14 ESLint-193 ESLint-160 ESLint-116 "
    "ESLint-226 ESLint-97"
).split()

# Where git trees come from: a folder of local mirrors (``--mirror-dir``), else the public URL. Set per process.
_mirror_dir: Path | None = None


def set_mirror_dir(path: Path | None) -> None:
    global _mirror_dir
    _mirror_dir = path


def _test_key(test: Mapping[str, Any]) -> tuple[str | None, str, str]:
    return (test.get("file"), str(test.get("classname", "")), str(test.get("name", "")))


def describe_test(test: Mapping[str, Any]) -> str:
    """One line for a test: mocha's full title (``classname name``), its file first when known."""
    file = test.get("file")
    return f"{file + ': ' if file else ''}{test.get('classname', '')} {test.get('name', '')}".strip()


@dataclass(frozen=True)
class JsBugTask:
    id: str
    project: str
    repo: str  # the BugsJS fork, "BugsJS/hexo"
    bug: int
    commits: dict[str, str]  # "buggy", "test", "fix", "full" -> sha
    test_cmd: tuple[str, ...]  # argv, no reporter; relative to the project root; globs left to mocha
    runner: str
    install: dict[str, Any]  # {"manager": "npm", "flags": [...], "from": "Bug-N-full package.json"}
    f2p: tuple[dict[str, Any], ...]
    p2p: tuple[dict[str, Any], ...]
    env_failures: tuple[dict[str, Any], ...]
    fix_paths: tuple[str, ...]
    test_paths: tuple[str, ...]
    versions: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return KIND

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}"

    def to_data(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "kind": KIND,
            "id": self.id,
            "project": self.project,
            "repo": self.repo,
            "bug": self.bug,
            "commits": dict(self.commits),
            "test_cmd": list(self.test_cmd),
            "runner": self.runner,
            "install": dict(self.install),
            "f2p": [dict(t) for t in self.f2p],
            "p2p": [dict(t) for t in self.p2p],
            "env_failures": [dict(t) for t in self.env_failures],
            "fix_paths": list(self.fix_paths),
            "test_paths": list(self.test_paths),
            "versions": dict(self.versions),
            "meta": dict(self.meta),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_data(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    # The steps, as methods too (the module's functions of the same names).
    def materialize(self, dest: Path, *, fixed: bool = False, cache: Path = CACHE_DIR) -> Path:
        return materialize(self, dest, fixed=fixed, cache=cache)

    def ci_report(self, dest: Path) -> Path:
        return ci_report(self, dest)

    def judge(self, dest: Path, cache: Path = CACHE_DIR) -> dict[str, Any]:
        return judge(self, dest, cache=cache)


def is_jsbug_file(data: Mapping[str, Any]) -> bool:
    return data.get("kind") == KIND


def task_from_data(data: Mapping[str, Any]) -> JsBugTask:
    if not is_jsbug_file(data):
        raise InputError(f"not a jsbug task file (kind {data.get('kind')!r})")
    return JsBugTask(
        id=data["id"],
        project=data["project"],
        repo=data["repo"],
        bug=int(data["bug"]),
        commits=dict(data["commits"]),
        test_cmd=tuple(data["test_cmd"]),
        runner=data.get("runner", "mocha"),
        install=dict(data.get("install", {})),
        f2p=tuple(dict(t) for t in data["f2p"]),
        p2p=tuple(dict(t) for t in data.get("p2p", ())),
        env_failures=tuple(dict(t) for t in data.get("env_failures", ())),
        fix_paths=tuple(data["fix_paths"]),
        test_paths=tuple(data.get("test_paths", ())),
        versions=dict(data.get("versions", {})),
        meta=dict(data.get("meta", {})),
    )


def load_task(path: Path) -> JsBugTask:
    return task_from_data(read_task_data(path))


def load_tasks(directory: Path) -> list[JsBugTask]:
    return load_folder(directory, load_task, lambda t: t.id)


# -- git -----------------------------------------------------------------------------------------------
def _git(args: Sequence[str], cwd: Path | None = None, timeout: float = GIT_TIMEOUT) -> bytes:
    return git(args, cwd=cwd, timeout=timeout, identity=True)


def mirror_for(repo: str, mirror_dir: Path | None) -> str:
    """The local mirror of ``owner/name`` in ``mirror_dir`` (``owner+name/repo``, ``owner+name``), else its URL."""
    if mirror_dir is not None:
        slug = repo.replace("/", "+")
        for candidate in (mirror_dir / slug / "repo", mirror_dir / slug):
            if (candidate / "HEAD").exists() or (candidate / ".git").exists():
                return str(candidate)
    return f"https://github.com/{repo}"


def git_cache(repo: str, commits: Iterable[str] = (), cache: Path = CACHE_DIR) -> Path:
    """A bare clone of the fork in the cache (shared with ``realbugs``'s layout), holding ``commits``."""
    bare = cache / "git" / f"{repo.replace('/', '+')}.git"
    if not (bare / ".complete").exists():
        shutil.rmtree(bare, ignore_errors=True)
        bare.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="jsbug-", dir=bare.parent))
        _git(["clone", "--bare", "--quiet", mirror_for(repo, _mirror_dir), str(tmp / "repo.git")])
        (tmp / "repo.git").rename(bare)
        shutil.rmtree(tmp, ignore_errors=True)
        (bare / ".complete").write_text("ok\n")
    for commit in commits:
        try:
            _git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=bare)
        except InputError:
            _git(["fetch", "--quiet", "--tags", mirror_for(repo, _mirror_dir)], cwd=bare)
            break
    return bare


def rev(bare: Path, ref: str) -> str:
    return _git(["rev-parse", f"{ref}^{{commit}}"], cwd=bare).decode().strip()


def export_tree(bare: Path, commit: str, dest: Path) -> Path:
    archive = dest.parent / f".{dest.name}.tar"
    dest.mkdir(parents=True, exist_ok=True)
    _git(["archive", "--format=tar", "-o", str(archive), commit], cwd=bare)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()
    return dest


def is_source_path(path: str) -> bool:
    name = Path(path).name
    return name not in NOT_SOURCE and not name.lower().endswith(DOC_SUFFIXES) and not path.startswith(".github/")


# -- node_modules --------------------------------------------------------------------------------------
def modules_cache(task_id: str, cache: Path = CACHE_DIR) -> Path:
    return cache / "jsbugs" / task_id


def _run(argv: Sequence[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """An install step (npm, cp): a subprocess with a timeout, as realbugs runs git and pip."""
    try:
        return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(list(argv), 124, "", f"timed out after {timeout:.0f}s: {exc}")


def npm_install(project: Path, log: Callable[[str], None] = lambda m: None) -> list[str]:
    """``npm install`` in ``project`` from its package.json (the registry only, no install scripts), retried
    with ``--legacy-peer-deps`` when npm refuses a peer conflict: the flags that worked."""
    tries = [list(NPM_FLAGS), [*NPM_FLAGS, *RETRY_FLAGS]]
    errors = []
    for flags in tries:
        started = time.monotonic()
        proc = _run(["npm", "install", *flags], project, NPM_TIMEOUT)
        log(f"  npm install {' '.join(flags)}: rc {proc.returncode}, {time.monotonic() - started:.0f}s")
        if proc.returncode == 0:
            (project / "node_modules").mkdir(exist_ok=True)  # a manifest with no dependencies installs none
            return flags
        errors.append(proc.stderr.strip()[-600:])
        shutil.rmtree(project / "node_modules", ignore_errors=True)
    raise InputError(f"npm install failed: {errors[-1]}")


def installed_versions(project: Path) -> dict[str, str]:
    """The version installed of every package the manifest names (dependencies and devDependencies)."""
    manifest = json.loads((project / "package.json").read_text(encoding="utf-8"))
    names = sorted({*manifest.get("dependencies", {}), *manifest.get("devDependencies", {})})
    versions = {}
    for name in names:
        meta = project / "node_modules" / name / "package.json"
        try:
            versions[name] = json.loads(meta.read_text(encoding="utf-8")).get("version", "?")
        except (OSError, ValueError):
            versions[name] = "missing"
    return versions


def ensure_modules(
    task_id: str,
    manifest: bytes,
    flags: Sequence[str] | None = None,
    cache: Path = CACHE_DIR,
    log: Callable[[str], None] = lambda m: None,
) -> Path:
    """The cached install of ``manifest`` (package.json's bytes) for ``task_id``: ``<cache>/jsbugs/<task>/``
    holding ``node_modules``, the ``package-lock.json`` npm wrote and ``install.json`` (flags, versions)."""
    where = modules_cache(task_id, cache)
    if (where / ".complete").exists() and (where / "package.json").read_bytes() == manifest:
        return where
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    (where / "package.json").write_bytes(manifest)
    if flags is None:
        used = npm_install(where, log)
    else:
        proc = _run(["npm", "install", *flags], where, NPM_TIMEOUT)
        if proc.returncode != 0:
            raise InputError(f"npm install {' '.join(flags)} failed: {proc.stderr.strip()[-600:]}")
        (where / "node_modules").mkdir(exist_ok=True)
        used = list(flags)
    info = {"flags": used, "versions": installed_versions(where), "node": node_version(), "npm": npm_version()}
    (where / "install.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (where / ".complete").write_text("ok\n")
    return where


@cache
def node_version() -> str:
    proc = _run(["node", "--version"], Path.cwd(), 30)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


@cache
def npm_version() -> str:
    proc = _run(["npm", "--version"], Path.cwd(), 60)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def copy_modules(where: Path, dest: Path) -> None:
    proc = _run(["cp", "-a", str(where / "node_modules"), str(dest / "node_modules")], dest, COPY_TIMEOUT)
    if proc.returncode != 0:
        raise InputError(f"copying node_modules failed: {proc.stderr.strip()[-300:]}")


# -- the tree ------------------------------------------------------------------------------------------
def _prepare(task: JsBugTask, dest: Path, cache: Path) -> Path:
    """Bug-N + the developers' test change + Bug-N-full's package.json at ``dest`` (no node_modules, no git)."""
    bare = git_cache(task.repo, task.commits.values(), cache)
    if dest.exists() and any(dest.iterdir()):
        raise InputError(f"{dest} is not empty")
    export_tree(bare, task.commits["buggy"], dest)
    overlay(bare, task.commits["test"], changed_paths(bare, task.commits["buggy"], task.commits["test"]), dest)
    manifest = file_at(bare, task.commits["full"], "package.json")
    if manifest is not None:
        (dest / "package.json").write_bytes(manifest)
    return bare


def _commit_tree(dest: Path, message: str) -> None:
    """``dest`` made a git repository with one commit (node_modules ignored, through .git/info/exclude: the
    tree itself is not changed), so a tool sees a clean tree."""
    _git(["init", "--quiet", "-b", "main"], cwd=dest)
    (dest / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (dest / ".git" / "info" / "exclude").write_text("/node_modules/\n", encoding="utf-8")
    _git(["add", "-A"], cwd=dest)
    _git(["commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message], cwd=dest)


def materialize(task: JsBugTask, dest: Path, *, fixed: bool = False, cache: Path = CACHE_DIR) -> Path:
    """Bug-N with the developers' test change, package.json from Bug-N-full and node_modules from the cache (or
    installed with the task's recorded flags on a miss), a git repository of one commit; ``fixed``: the
    developers' fix applied too (uncommitted on top)."""
    bare = _prepare(task, dest, cache)
    manifest = (dest / "package.json").read_bytes()
    where = ensure_modules(task.id, manifest, task.install.get("flags"), cache)
    copy_modules(where, dest)
    _commit_tree(dest, f"{task.id}: Bug-{task.bug} with the developers' test change")
    if fixed:
        overlay(bare, task.commits["fix"], task.fix_paths, dest)
    return dest


# -- running the tests ---------------------------------------------------------------------------------
def report_path(task: JsBugTask, dest: Path) -> Path:
    """Where the CI report of ``dest`` goes: beside the tree, never in it."""
    return dest.resolve().parent / f"junit-{task.id}.xml"


def with_reporter(test_cmd: Sequence[str], output: Path) -> list[str]:
    """The test command with mocha's built-in xunit reporter writing ``output`` (every mocha since 2.x)."""
    return [test_cmd[0], "-R", "xunit", "--reporter-options", f"output={output}", *test_cmd[1:]]


@dataclass(frozen=True)
class MochaRun:
    results: dict[tuple[str | None, str, str], str]  # test key -> passed | failed | skipped
    returncode: int | None
    seconds: float
    error: str = ""  # why no report was read (a crash before mocha reported)
    tail: str = ""  # the run's last output, for the log


def run_mocha(
    test_cmd: Sequence[str],
    cwd: Path,
    output: Path,
    *,
    wall_seconds: float = TEST_WALL_SECONDS,
    isolation: Isolation | None = None,
) -> MochaRun:
    """The task's tests in ``cwd`` through the product's sandbox runner, the xunit report written to ``output``
    (outside ``cwd``) and read back."""
    output.unlink(missing_ok=True)
    argv = with_reporter(test_cmd, output)
    limits = Limits(wall_seconds=wall_seconds, cpu_seconds=int(wall_seconds * 2), memory_bytes=None)
    writable = (str(cwd), str(output.parent)) if isolation is not None else ()
    started = time.monotonic()
    try:
        proc = run_process(
            argv, cwd=cwd, env=sandbox_env(os.environ), limits=limits, isolation=isolation, writable=writable
        )
    except SandboxError as exc:
        return MochaRun({}, None, 0.0, f"could not start: {exc}")
    seconds = round(time.monotonic() - started, 1)
    output_text = (proc.stderr.strip() or proc.stdout.strip()).replace(str(cwd), "<tree>")
    first_error = next((line for line in output_text.splitlines() if "Error" in line), "")
    tail = (first_error + " ... " if first_error else "") + output_text[-600:]
    text = output.read_text(encoding="utf-8", errors="replace") if output.exists() else ""
    if "<testsuite" not in text and "<testsuite" in proc.stdout:
        # mocha 1.x ignores ``output=`` and writes the XML to stdout.
        text = proc.stdout[proc.stdout.index("<testsuite") :]
        output.write_text(text, encoding="utf-8")
    if proc.timed_out:
        return MochaRun({}, proc.returncode, seconds, f"timed out after {wall_seconds:.0f}s", tail)
    if "<testsuite" not in text:
        return MochaRun({}, proc.returncode, seconds, f"no xunit report (rc {proc.returncode})", tail)
    try:
        results = parse_xunit(text, cwd)
    except ET.ParseError as exc:
        return MochaRun({}, proc.returncode, seconds, f"unreadable xunit report: {exc}", tail)
    return MochaRun(results, proc.returncode, seconds, "", tail)


_BAD_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def parse_xunit(text: str, root: Path | None = None) -> dict[tuple[str | None, str, str], str]:
    """Mocha's xunit report: (file, classname, name) -> passed | failed | skipped. ``file`` is made relative to
    ``root`` (None when mocha does not name it). A key met twice (ESLint's RuleTester titles are code snippets,
    sometimes repeated) is failed when any of its cases failed."""
    start = text.find("<testsuite")
    end = text.rfind("</testsuite>")
    body = text[start : end + len("</testsuite>")] if end > start else text[start:]
    tree = ET.fromstring(_BAD_XML_CHARS.sub("", body))
    results: dict[tuple[str | None, str, str], str] = {}
    base = str(root.resolve()) + os.sep if root is not None else None
    for case in tree.iter("testcase"):
        file = case.get("file")
        if file and base and file.startswith(base):
            file = file[len(base) :]
        elif file and root is not None and Path(file).is_absolute():
            file = file  # outside the project: kept as mocha names it
        key = (file or None, case.get("classname", ""), case.get("name", ""))
        if case.find("failure") is not None or case.find("error") is not None:
            status = "failed"
        elif case.find("skipped") is not None:
            status = "skipped"
        else:
            status = "passed"
        previous = results.get(key)
        if previous == "failed" or (previous == "passed" and status == "skipped"):
            continue
        results[key] = status
    return results


def _as_test(key: tuple[str | None, str, str]) -> dict[str, Any]:
    return {"file": key[0], "classname": key[1], "name": key[2]}


def ci_report(task: JsBugTask, dest: Path, *, isolation: Isolation | None = None) -> Path:
    """Run the task's test command in ``dest`` as the project's CI would, with mocha's xunit reporter writing
    ``<dest>/../junit-<task>.xml``: the report's path. The task's environment failures (they fail before and
    after the developers' fix here, on Node 20: time zones, should@5; the project's CI of the day passed them) are
    left out of it, as the report of a CI in the project's own environment would have them passing."""
    output = report_path(task, dest)
    run = run_mocha(task.test_cmd, dest, output, isolation=isolation)
    if not output.exists():
        raise InputError(f"{task.id}: the test command wrote no report: {run.error}; {run.tail[-300:]}")
    _drop_cases(output, {(str(t.get("classname", "")), str(t.get("name", ""))) for t in task.env_failures})
    return output


def _drop_cases(report: Path, names: set[tuple[str, str]]) -> None:
    """The report without the test cases named (classname, name)."""
    if not names:
        return
    tree = ET.parse(report)
    for suite in tree.getroot().iter("testsuite"):
        for case in list(suite.findall("testcase")):
            if (case.get("classname", ""), case.get("name", "")) in names:
                suite.remove(case)
    tree.write(report, encoding="unicode")


# -- the syntax judge ----------------------------------------------------------------------------------
@cache
def _js_parser() -> Any:
    import tree_sitter
    import tree_sitter_javascript

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_javascript.language()))


def syntax_tokens(source: str) -> list[tuple[str, str]]:
    """The JavaScript syntax tree of ``source`` as a sequence: every node's type, and every leaf's text (comment
    nodes dropped, so comments, whitespace and layout never count)."""
    tree = _js_parser().parse(source.encode("utf-8"))
    out: list[tuple[str, str]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.child_count == 0:
            out.append((node.type, (node.text or b"").decode("utf-8", errors="replace")))
        else:
            out.append((node.type, ""))
            stack.extend(reversed(node.children))
    return out


def same_syntax(a: str, b: str) -> bool:
    return syntax_tokens(a) == syntax_tokens(b)


def same_file(path: str, a: str, b: str) -> bool:
    """Same code: the syntax trees of JavaScript files, the words of other files."""
    if path.endswith((".js", ".cjs", ".mjs", ".jsx")):
        return same_syntax(a, b)
    return a.split() == b.split()


def compare_to_fix(patched: Mapping[str, str], dev_fixed: Mapping[str, str], buggy: Mapping[str, str]) -> bool:
    """The patch is the developers' fix in syntax: it changes no file they did not, and every file they fixed
    has their fixed file's syntax tree in the patched tree (``patched``: the patch's files; ``dev_fixed``: the
    developers' fixed texts, "" for a file they deleted; ``buggy``: the texts before, by path)."""
    if set(patched) - set(dev_fixed):
        return False
    for path, theirs in dev_fixed.items():
        mine = patched.get(path, buggy.get(path, ""))
        if not same_file(path, mine, theirs):
            return False
    return True


# -- judging -------------------------------------------------------------------------------------------
def tree_diff(dest: Path) -> tuple[list[str], str]:
    """The files changed in ``dest`` since its one commit (node_modules aside) and the diff."""
    _git(["add", "-A"], cwd=dest)
    names = _git(["diff", "--cached", "--name-only", "--no-renames", "HEAD"], cwd=dest).decode().splitlines()
    diff = _git(["diff", "--cached", "--no-renames", "HEAD"], cwd=dest).decode("utf-8", errors="replace")
    return [n for n in names if n], diff


def judge(
    task: JsBugTask, dest: Path, *, cache: Path = CACHE_DIR, isolation: Isolation | None = None
) -> dict[str, Any]:
    """The verdict on ``dest`` (a materialized tree with a patch applied): ``resolved`` (every F2P test passes,
    no P2P test fails; the patch's edits to the developers' test files are undone first: they never count),
    ``same_syntax`` (the developers' fix, comments and layout aside) and the patch's diff."""
    bare = git_cache(task.repo, task.commits.values(), cache)
    changed, diff = tree_diff(dest)
    test_edits = [p for p in changed if p in task.test_paths]
    if test_edits:
        overlay(bare, task.commits["test"], test_edits, dest)
    patched = {p: _read(dest / p) for p in changed if p not in test_edits}
    buggy = {p: (file_at(bare, task.commits["test"], p) or b"").decode("utf-8", errors="replace") for p in patched}
    dev_fixed = {
        p: (file_at(bare, task.commits["fix"], p) or b"").decode("utf-8", errors="replace") for p in task.fix_paths
    }
    for path in dev_fixed:
        buggy.setdefault(path, (file_at(bare, task.commits["buggy"], path) or b"").decode("utf-8", errors="replace"))
    run = run_mocha(task.test_cmd, dest, report_path(task, dest).with_suffix(".judge.xml"), isolation=isolation)
    f2p_bad = [t for t in task.f2p if run.results.get(_test_key(t)) != "passed"]
    p2p_bad = [t for t in task.p2p if run.results.get(_test_key(t)) != "passed"]
    resolved = bool(run.results) and not f2p_bad and not p2p_bad
    try:
        same = bool(patched) and compare_to_fix(patched, dev_fixed, buggy)
    except Exception:  # a parser failure is "not the same", never a crash of the run
        same = False
    return {
        "resolved": resolved,
        "same_syntax": same,
        "f2p_failing": [describe_test(t) for t in f2p_bad],
        "p2p_failing": [describe_test(t) for t in p2p_bad],
        "edited_files": sorted(patched),
        "edited_tests": test_edits,
        "outside_fix_files": sorted(set(patched) - set(task.fix_paths)),
        "diff": diff,
        "run_error": run.error,
    }


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


# -- building and validating ---------------------------------------------------------------------------
def parse_bug_id(bug_id: str) -> tuple[str, int]:
    project, _, number = bug_id.rpartition("-")
    if project not in PROJECTS or not number.isdigit():
        raise InputError(f"not a bug of a known project ({', '.join(PROJECTS)}): {bug_id!r}")
    return project, int(number)


def command_for(project: str, test_paths: Sequence[str], scope: str | None = None) -> list[str]:
    config = PROJECTS[project]
    scope = scope or config["scope"]
    pattern = re.compile(config["test_files"])
    changed = [p for p in test_paths if pattern.search(p) and p.endswith(".js") and "/fixtures/" not in p]
    files = changed if scope == "changed" and changed else list(config["suite"])
    return [*config["runner"], *files]


@dataclass
class BuildOutcome:
    task: JsBugTask | None
    reason: str  # why it was dropped ("" when kept)
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)


def build_task(
    bug_id: str, *, scope: str | None = None, cache: Path = CACHE_DIR, log: Callable[[str], None] = lambda m: None
) -> BuildOutcome:
    """Rebuild one bug, run its tests on Bug-N + tests (twice) and with the fix, keep it if it validates: some
    test fails on the buggy tree (both runs) and passes with the fix, and no test passing before fails after."""
    started = time.monotonic()
    project, number = parse_bug_id(bug_id)
    config = PROJECTS[project]

    def dropped(reason: str, **counts: int) -> BuildOutcome:
        log(f"{bug_id}: dropped: {reason}")
        return BuildOutcome(None, reason, round(time.monotonic() - started, 1), counts)

    bare = git_cache(config["repo"], (), cache)
    commits = {}
    for key, suffix in (("buggy", ""), ("test", "-test"), ("fix", "-fix"), ("full", "-full")):
        try:
            commits[key] = rev(bare, f"refs/tags/Bug-{number}{suffix}")
        except InputError:
            return dropped(f"no tag Bug-{number}{suffix} in {config['repo']}")
    test_paths = changed_paths(bare, commits["buggy"], commits["test"])
    fix_paths = [p for p in changed_paths(bare, commits["buggy"], commits["fix"]) if is_source_path(p)]
    if not fix_paths:
        return dropped("the fix changes no source file")
    argv = command_for(project, test_paths, scope)
    draft = JsBugTask(
        id=bug_id,
        project=project,
        repo=config["repo"],
        bug=number,
        commits=commits,
        test_cmd=tuple(argv),
        runner="mocha",
        install={},
        f2p=(),
        p2p=(),
        env_failures=(),
        fix_paths=tuple(fix_paths),
        test_paths=tuple(test_paths),
        versions={},
    )
    with tempfile.TemporaryDirectory(prefix="selfix-jsbug-") as tmp:
        dest = Path(tmp) / "project"
        _prepare(draft, dest, cache)
        try:
            where = ensure_modules(bug_id, (dest / "package.json").read_bytes(), None, cache, log)
        except InputError as exc:
            return dropped(str(exc)[:400])
        info = json.loads((where / "install.json").read_text(encoding="utf-8"))
        copy_modules(where, dest)
        _commit_tree(dest, f"{bug_id}: buggy + tests")
        out = Path(tmp) / "reports"
        out.mkdir()
        before = run_mocha(argv, dest, out / "buggy.xml")
        log(f"  buggy+tests: {_summary(before)}")
        again = run_mocha(argv, dest, out / "buggy2.xml")
        overlay(bare, commits["fix"], fix_paths, dest)
        after = run_mocha(argv, dest, out / "fixed.xml")
        log(f"  fixed: {_summary(after)}")
    if not after.results:
        return dropped(f"the fixed tree's tests do not run: {after.error}; {after.tail[:300]}")
    if not before.results:
        return dropped(f"the buggy tree's tests do not run: {before.error}; {before.tail[:300]}")
    ok_after = {k for k, s in after.results.items() if s == "passed"}
    ok_before = {k for k, s in before.results.items() if s == "passed"}
    failed_after = {k for k, s in after.results.items() if s == "failed"}
    failed_both_runs = {
        k for k in ok_after if before.results.get(k, "failed") == "failed" and again.results.get(k) != "passed"
    }
    unstable = {k for k in ok_after if before.results.get(k) == "failed" and again.results.get(k) == "passed"}
    f2p = sorted(failed_both_runs, key=_sort_key)
    p2p = sorted(ok_before & ok_after, key=_sort_key)
    broken = sorted(ok_before & failed_after, key=_sort_key)
    env = sorted({k for k, s in before.results.items() if s == "failed"} & failed_after, key=_sort_key)
    counts = {"f2p": len(f2p), "p2p": len(p2p), "env": len(env), "broken": len(broken), "unstable": len(unstable)}
    if not f2p:
        return dropped(f"no test fails on Bug-{number} + tests and passes with the fix ({_summary(after)})", **counts)
    if broken:
        return dropped(f"{len(broken)} test(s) pass before the fix and fail after: {broken[:3]}", **counts)
    task = JsBugTask(
        **{
            **draft.__dict__,
            "install": {
                "manager": "npm",
                "command": ["npm", "install", *info["flags"]],
                "flags": info["flags"],
                "manifest": f"package.json of Bug-{number}-full",
            },
            "f2p": tuple(_as_test(k) for k in f2p),
            "p2p": tuple(_as_test(k) for k in p2p),
            "env_failures": tuple(_as_test(k) for k in env),
            "versions": {"node": info["node"], "npm": info["npm"], **info["versions"]},
            "meta": {
                "source": "BugsJS",
                "tags": {k: f"Bug-{number}{s}" for k, s in (("buggy", ""), ("test", "-test"), ("fix", "-fix"))}
                | {"full": f"Bug-{number}-full"},
                "scope": scope or config["scope"],
                "unstable": [describe_test(_as_test(k)) for k in sorted(unstable, key=_sort_key)],
                "fix_lines": _fix_lines(bare, commits["buggy"], commits["fix"], fix_paths),
                "validated_seconds": round(time.monotonic() - started, 1),
                "test_seconds": {"buggy": before.seconds, "fixed": after.seconds},
            },
        }
    )
    log(f"{bug_id}: kept: {len(f2p)} F2P, {len(p2p)} P2P, {len(env)} environment failures")
    return BuildOutcome(task, "", round(time.monotonic() - started, 1), counts)


def _sort_key(key: tuple[str | None, str, str]) -> tuple[str, str, str]:
    return (key[0] or "", key[1], key[2])


def _summary(run: MochaRun) -> str:
    if not run.results:
        return f"no results ({run.error})"
    failed = sum(1 for s in run.results.values() if s == "failed")
    return f"{failed}/{len(run.results)} failed, rc {run.returncode}, {run.seconds}s"


def _fix_lines(bare: Path, a: str, b: str, paths: Sequence[str]) -> int:
    out = _git(["diff", "--numstat", "--no-renames", a, b, "--", *paths], cwd=bare).decode()
    total = 0
    for line in out.splitlines():
        added, removed, _ = line.split("\t", 2)
        total += int(added) + int(removed) if added.isdigit() and removed.isdigit() else 0
    return total


def build_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.jsbugs build")
    parser.add_argument("--mirror-dir", type=Path, help="local mirrors of the BugsJS forks (owner+name/repo)")
    parser.add_argument("--out", type=Path, default=Path("bench/jsbugs/tasks"))
    parser.add_argument("--bugs", default="", help="bug ids, e.g. Hessian.js-1,Hexo-3 (default: the 20, then spares)")
    parser.add_argument("--scope", choices=["changed", "suite"], help="tests the command runs (default per project)")
    parser.add_argument("--log", type=Path, default=Path("bench/jsbugs/build-log.jsonl"))
    parser.add_argument("--rebuild", action="store_true", help="build again bugs already built or logged")
    args = parser.parse_args(argv)
    set_mirror_dir(args.mirror_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    explicit = [b.strip() for b in args.bugs.split(",") if b.strip()]
    logged = set()
    if args.log.exists() and not args.rebuild:
        logged = {json.loads(line)["id"] for line in args.log.read_text(encoding="utf-8").splitlines() if line}

    def build_one(bug_id: str) -> bool:
        if (args.out / f"{bug_id}.json").exists() and not args.rebuild:
            return True
        if bug_id in logged:
            return False  # dropped before (the log says why)
        print(f"{bug_id}: building", flush=True)
        try:
            outcome = build_task(bug_id, scope=args.scope, log=lambda m: print(m, flush=True))
        except Exception as exc:  # one bug's trouble (git, npm, a suite that cannot start) drops that bug only
            outcome = BuildOutcome(None, f"error: {exc}"[:400], 0.0)
            print(f"{bug_id}: dropped: {outcome.reason}", flush=True)
        if outcome.task is not None:
            (args.out / f"{bug_id}.json").write_text(outcome.task.to_json(), encoding="utf-8")
        with open(args.log, "a", encoding="utf-8") as handle:
            record = {"id": bug_id, "kept": outcome.task is not None, "reason": outcome.reason}
            record |= {"seconds": outcome.seconds, **outcome.counts}
            handle.write(json.dumps(record, sort_keys=True) + "\n")
        return outcome.task is not None

    for bug_id in explicit or DEFAULT_BUGS:
        parse_bug_id(bug_id)
        build_one(bug_id)
    if not explicit:  # a dropped bug is replaced by a spare of its own project
        for project in PROJECTS:
            quota = sum(1 for b in DEFAULT_BUGS if parse_bug_id(b)[0] == project)
            have = sum(1 for p in args.out.glob("*.json") if p.stem.rpartition("-")[0] == project)
            for spare in (b for b in SPARES if parse_bug_id(b)[0] == project):
                if have >= quota:
                    break
                if not (args.out / f"{spare}.json").exists() and build_one(spare):
                    have += 1
    return 0


# -- healing -------------------------------------------------------------------------------------------
def read_results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def heal_task(
    task: JsBugTask,
    engine: EngineChoice,
    workdir: Path,
    *,
    isolation: str = "auto",
    test_timeout: float = TEST_WALL_SECONDS,
    cache: Path = CACHE_DIR,
    keep: Path | None = None,
    time_limit: float = 900.0,
) -> dict[str, Any]:
    """Materialize, write the CI report, heal through the product as ``selfix fix`` would, judge the healed files
    on a fresh copy: one results line. ``keep``: where the heal's report, trace (every prompt and answer) and patch
    are copied, the run's transcript."""
    started = time.monotonic()
    record: dict[str, Any] = {"task": task.id, "project": task.project}
    repo = materialize(task, workdir / "repo", cache=cache)
    junit = ci_report(task, repo)
    options = FixOptions(
        repo=repo,
        junit=(junit,),
        test_cmd=task.test_cmd,
        engine=engine,
        out=workdir / "out",
        quiet=True,
        test_timeout=test_timeout,
        time_limit=time_limit,
        isolation=isolation,
    )
    try:
        outcome = heal_with(fix_request(options))
    except InputError as exc:
        record.update(
            stop_reason=f"refused: {exc}"[:500], exit_code=None, confidence=None, calls=0, tokens=0, resolved=False
        )
        record.update(same_syntax=False, diff="", seconds=round(time.monotonic() - started, 1))
        return record
    report = outcome.report
    if keep is not None and outcome.paths is not None:
        keep.mkdir(parents=True, exist_ok=True)
        for name in ("report.json", "report.md", "trace.jsonl", "patch.diff"):
            if (workdir / "out" / name).is_file():
                shutil.copy2(workdir / "out" / name, keep / name)
    record["stop_reason"] = report.stop_reason.value
    record["reasons"] = [r.code for r in report.confidence.reasons] if report.confidence is not None else []
    record["review"] = report.review.verdict if report.review is not None else None
    record["exit_code"] = report.exit_code
    record["confidence"] = report.confidence.level if report.confidence is not None else None
    record["calls"] = report.usage.calls
    record["tokens"] = report.usage.tokens
    files = outcome.result.files
    if files:
        judged = materialize(task, workdir / "judged" / "repo", cache=cache)
        for rel, text in files.items():
            target = (judged / rel).resolve()
            if not target.is_relative_to(judged.resolve()):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        verdict = judge(task, judged, cache=cache)
        record.update(verdict)
    else:
        record.update(resolved=False, same_syntax=False, diff="")
    record["seconds"] = round(time.monotonic() - started, 1)
    return record


def heal_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.jsbugs heal")
    parser.add_argument("--tasks", type=Path, default=Path("bench/jsbugs/tasks"))
    parser.add_argument("--out", type=Path, required=True, help="results.jsonl goes here (resumable)")
    parser.add_argument(
        "--engine", default="offline", choices=[*ENGINE_KINDS, "llm"], help="as selfix fix; llm: openai"
    )
    parser.add_argument("--only", default="", help="task ids, comma-separated")
    parser.add_argument("--isolation", default="auto", help="as selfix fix (auto, bwrap, landlock, unshare, none)")
    parser.add_argument("--test-timeout", type=float, default=TEST_WALL_SECONDS)
    parser.add_argument("--time-limit", type=float, default=900.0, help="wall seconds per heal (as selfix fix)")
    parser.add_argument("--mirror-dir", type=Path)
    add_llm_arguments(parser)
    args = parser.parse_args(argv)
    set_mirror_dir(args.mirror_dir)
    kind = "openai" if args.engine == "llm" else args.engine
    engine = engine_choice(args, kind, os.environ)
    only = {t.strip() for t in args.only.split(",") if t.strip()}
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    done = {r["task"] for r in read_results(results)}
    for task in load_tasks(args.tasks):
        if (only and task.id not in only) or task.id in done:
            continue
        print(f"{task.id}: healing", flush=True)
        with tempfile.TemporaryDirectory(prefix=f"selfix-jsheal-{task.id}-") as tmp:
            try:
                record = heal_task(
                    task,
                    engine,
                    Path(tmp),
                    isolation=args.isolation,
                    test_timeout=args.test_timeout,
                    time_limit=args.time_limit,
                    keep=args.out / task.id,
                )
            except Exception as exc:  # one task's trouble is its record, not the run's end
                record = {"task": task.id, "project": task.project, "stop_reason": f"error: {exc}"[:500]}
                record.update(resolved=False, same_syntax=False, exit_code=None, confidence=None, calls=0, tokens=0)
        print(
            f"{task.id}: {record['stop_reason'][:160]}; resolved {record['resolved']}, "
            f"same syntax {record['same_syntax']}",
            flush=True,
        )
        with open(results, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
    return 0


def check_task(task: JsBugTask, workdir: Path, cache: Path = CACHE_DIR) -> dict[str, Any]:
    """The task file checked against a rebuilt tree: the developers' fix judged resolved with their syntax, the
    unedited tree not resolved (every F2P test still failing)."""
    fixed = judge(task, materialize(task, workdir / "fixed" / "repo", fixed=True, cache=cache), cache=cache)
    buggy = judge(task, materialize(task, workdir / "buggy" / "repo", cache=cache), cache=cache)
    ok = fixed["resolved"] and fixed["same_syntax"] and not buggy["resolved"]
    ok = ok and len(buggy["f2p_failing"]) == len(task.f2p) and not buggy["p2p_failing"]
    return {
        "task": task.id,
        "ok": ok,
        "fix_resolved": fixed["resolved"],
        "fix_same_syntax": fixed["same_syntax"],
        "fix_failing": fixed["f2p_failing"] + fixed["p2p_failing"],
        "buggy_f2p_failing": len(buggy["f2p_failing"]),
        "buggy_p2p_failing": buggy["p2p_failing"],
    }


def check_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.jsbugs check")
    parser.add_argument("--tasks", type=Path, default=Path("bench/jsbugs/tasks"))
    parser.add_argument("--only", default="", help="task ids, comma-separated")
    parser.add_argument("--mirror-dir", type=Path)
    args = parser.parse_args(argv)
    set_mirror_dir(args.mirror_dir)
    only = {t.strip() for t in args.only.split(",") if t.strip()}
    bad = 0
    for task in load_tasks(args.tasks):
        if only and task.id not in only:
            continue
        with tempfile.TemporaryDirectory(prefix=f"selfix-jscheck-{task.id}-") as tmp:
            result = check_task(task, Path(tmp))
        bad += not result["ok"]
        print(json.dumps(result, sort_keys=True), flush=True)
    return 1 if bad else 0


def untested_callers_of(task: JsBugTask, records: Sequence[Mapping[str, Any]], workdir: Path) -> list[dict[str, Any]]:
    """For each resolved patch of ``task``: the functions of the project that call an edited function and that
    no test runs on the unpatched tree (the product's ``differential.untested_callers`` over the product's own
    baseline run with per-test coverage): what the confidence rule's ``untested_callers`` reason would name."""
    tree = materialize(task, workdir / task.id)
    project = NodeProject("npm", task.runner, " ".join(task.test_cmd))
    out = []
    with NodeSandbox(tree, list(task.test_cmd), project) as sandbox:
        baseline = sandbox.run_tests(None, coverage=True)
        sources = {path: sandbox.read_file(path) for path in sandbox.source_files()}
        for record in records:
            patched = apply_unified_diff(str(record["diff"]), sources.get)
            edited = {(t.path, t.qualname) for t in probe_targets(sources, [patched])}
            callers = untested_callers(edited, sources, baseline.coverage or {})
            out.append({"task": task.id, "confidence": record.get("confidence"), "edited": sorted(q for _, q in edited),
                        "covered_tests": len(baseline.coverage or {}), "untested_callers": list(callers)})  # fmt: skip
    return out


def callers_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m selfix_bench.jsbugs callers",
        description="the untested callers of each resolved patch's edited functions, as the confidence rule sees them",
    )
    parser.add_argument("results", type=Path, nargs="+", help="results.jsonl files of heal runs")
    parser.add_argument("--level", default="high", help="only patches at this confidence (all: every level)")
    parser.add_argument("--mirror-dir", type=Path)
    args = parser.parse_args(argv)
    set_mirror_dir(args.mirror_dir)
    tasks = {
        t.id: t for folder in (Path("bench/jsbugs/tasks"), Path("bench/jsbugs/spares")) for t in load_tasks(folder)
    }
    wanted: dict[str, list[Mapping[str, Any]]] = {}
    for path in args.results:
        for record in read_results(path):
            if record.get("resolved") and args.level in ("all", record.get("confidence")):
                wanted.setdefault(str(record["task"]), []).append(record)
    for task_id, records in sorted(wanted.items()):
        with tempfile.TemporaryDirectory(prefix=f"selfix-jscallers-{task_id}-") as tmp:
            for row in untested_callers_of(tasks[task_id], records, Path(tmp)):
                print(json.dumps(row, sort_keys=True), flush=True)
    return 0


# -- the report ----------------------------------------------------------------------------------------
def verdict(record: Mapping[str, Any], reviews: Mapping[str, Any]) -> str:
    """correct, partial, wrong, unread (resolved in another syntax, no grader's verdict yet) or unresolved: a
    resolved patch with the developers' syntax is correct; another is what a grader read and argued
    (``reviews``: task -> {patch digest: {"verdict", "argument"}}, written by the graders: a verdict holds for
    the patch it read, so a later run's other patch for the same bug is unread until read)."""
    if not record.get("resolved"):
        return "unresolved"
    if record.get("same_syntax"):
        return "correct"
    graded = reviews.get(str(record["task"]), {}).get(patch_digest(str(record.get("diff", ""))), {})
    return str(graded.get("verdict", "unread"))


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def summarize(records: Sequence[Mapping[str, Any]], reviews: Mapping[str, Any] | None = None) -> list[str]:
    """Counts with 95% Wilson intervals: resolved, correct (the developers' syntax, or a grader's reading), by
    confidence level with its partial and wrong patches, and the median calls and tokens of a heal."""
    reviews = reviews or {}
    n = len(records)

    def line(label: str, k: int, total: int) -> str:
        low, high = wilson_interval(k, total)
        return f"{label}: {k}/{total} ({100 * low:.0f}-{100 * high:.0f}% Wilson 95%)"

    verdicts = {str(r["task"]): verdict(r, reviews) for r in records}
    resolved = sum(1 for r in records if r.get("resolved"))
    same = sum(1 for r in records if r.get("resolved") and r.get("same_syntax"))
    correct = sum(1 for v in verdicts.values() if v == "correct")
    refused = sum(1 for r in records if str(r.get("stop_reason", "")).startswith("refused"))
    lines = [f"tasks: {n}" + (f" ({refused} refused)" if refused else "")]
    lines.append(line("resolved", resolved, n))
    lines.append(line("correct (the developers' syntax, or read and argued correct)", correct, n))
    lines.append(f"  of which the developers' syntax: {same}; read: {correct - same}")
    counts = {v: sum(1 for x in verdicts.values() if x == v) for v in ("partial", "wrong", "unread", "unresolved")}
    lines.append("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    levels = sorted({str(r.get("confidence")) for r in records if r.get("confidence")})
    for level in levels:
        at = [str(r["task"]) for r in records if str(r.get("confidence")) == level]
        right = sum(1 for t in at if verdicts[t] == "correct")
        bad = [f"{t} ({verdicts[t]})" for t in at if verdicts[t] in ("partial", "wrong", "unresolved")]
        unread = sum(1 for t in at if verdicts[t] == "unread")
        lines.append(
            line(f"confidence {level}: correct", right, len(at))
            + f"; partial or wrong: {', '.join(bad) or 'none'}"
            + (f"; unread {unread}" if unread else "")
        )
    healed = [r for r in records if r.get("calls")]
    if healed:
        lines.append(
            f"median per heal: {_median([float(r['calls']) for r in healed]):g} model calls, "
            f"{_median([float(r.get('tokens') or 0) for r in healed]):,.0f} tokens, "
            f"{_median([float(r.get('seconds') or 0) for r in healed]):.0f} s"
        )
    by_project: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_project.setdefault(str(r.get("project", r["task"].rpartition("-")[0])), []).append(r)
    for project, rows in sorted(by_project.items()):
        lines.append(
            line(f"  {project}: resolved", sum(1 for r in rows if r.get("resolved")), len(rows))
            + f", correct {sum(1 for r in rows if verdicts[str(r['task'])] == 'correct')}"
        )
    return lines


def compared(
    records: Sequence[Mapping[str, Any]], previous: Sequence[Mapping[str, Any]], reviews: Mapping[str, Any]
) -> list[str]:
    """This run against an earlier one on the tasks both have: resolved, correct and `high`-and-correct, each
    with the exact McNemar test on the discordant tasks."""
    mine = {str(r["task"]): r for r in records}
    theirs = {str(r["task"]): r for r in previous}
    checks: dict[str, Callable[[Mapping[str, Any]], bool]] = {
        "resolved": lambda r: bool(r.get("resolved")),
        "correct": lambda r: verdict(r, reviews) == "correct",
        "high and correct": lambda r: r.get("confidence") == "high" and verdict(r, reviews) == "correct",
        "high and not correct": lambda r: r.get("confidence") == "high" and verdict(r, reviews) != "correct",
    }
    lines = []
    for label, check in checks.items():
        p = paired_comparison({t: check(r) for t, r in mine.items()}, {t: check(r) for t, r in theirs.items()})
        lines.append(
            f"paired with the earlier run, {label}: both {p.both}, only this run {p.only_a}, only the earlier run "
            f"{p.only_b}, neither {p.neither} of {p.shared}; exact McNemar p = {p.p_value:.3g}"
        )
    return lines


def report_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.jsbugs report")
    parser.add_argument("dir", type=Path, help="a heal run's folder (results.jsonl)")
    parser.add_argument("--reviews", type=Path, help="the graders' verdicts (bench/jsbugs/reviewed.json)")
    parser.add_argument("--compare", type=Path, help="an earlier run's results.jsonl, paired task by task")
    args = parser.parse_args(argv)
    records = read_results(args.dir / "results.jsonl")
    if not records:
        raise InputError(f"no results in {args.dir / 'results.jsonl'}")
    reviews = json.loads(args.reviews.read_text(encoding="utf-8")) if args.reviews else {}
    lines = summarize(records, reviews)
    if args.compare is not None:
        previous = read_results(args.compare)
        if not previous:
            raise InputError(f"no results in {args.compare}")
        lines += compared(records, previous, reviews)
    print("\n".join(lines))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {
        "build": build_main,
        "check": check_main,
        "heal": heal_main,
        "report": report_main,
        "callers": callers_main,
    }
    if not argv or argv[0] not in commands:
        print("usage: python -m selfix_bench.jsbugs {build|check|heal|report|callers} ...", file=sys.stderr)
        return 2
    try:
        return commands[argv[0]](argv[1:])
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
