"""Bug-injection generator: one-line syntax-tree mutations of real libraries, kept only when validated.

    python -m selfix_bench.generate --library toolz --out bench/tasks --max-tasks 40

The library comes from its PyPI sdist (``pip download --no-deps --no-binary :all:``, cached under
``~/.cache/selfix-bench``), pinned by sha256 in every task file. Mutants are the offline engine's own repair
templates applied to correct code (each template is its own inverse: ``<`` -> ``<=``, ``+ 1`` -> ``- 1``, ``a``
-> ``b``), rendered as a splice inside one line so the original formatting is kept. A mutant becomes a task only if:

- the original suite passes (tests that do not pass on two baseline runs are left out of the task),
- the mutant fails at least one test (F2P) and at most 25% of the suite, every other test passes (P2P),
- a second run gives the same failing set,
- it is not a duplicate (same normalized AST) and not equivalent to a kept one on the tests (same failing set
  and failure messages at the same function),
- its bug report (failing test names + assertion output only) passes the leak check.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from selfix_action.offline.templates import SourceEdit, candidate_edits
from selfix_action.repair.localize import function_spans
from selfix_action.repair.values import TestRun, TestStatus
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.base import CACHE_DIR
from selfix_bench.tasks import Bug, Task, fetch_sdist, leak_reasons, sha256_of

MAX_BROKEN_FRACTION = 0.25
MAX_KIND_FRACTION = 0.2  # no bug kind makes up more than this share of a library's tasks
BUG_KINDS = (
    "compare_replace",
    "binop_replace",
    "off_by_one",
    "literal_tweak",
    "boolop_replace",
    "condition_negate",
    "bool_flip",
    "unary_replace",
    "arg_swap",
    "sibling_call",
    "attribute_replace",
    "name_replace",
    "operand_replace",
)


@dataclass(frozen=True)
class Library:
    name: str
    version: str
    root: str  # top folder inside the sdist
    modules: tuple[str, ...]  # repo-relative files to mutate
    test_paths: tuple[str, ...]
    pytest: str = ""  # pinned pytest for the test environment ("" = ours)


LIBRARIES = {
    "toolz": Library(
        "toolz",
        "0.12.1",
        "toolz-0.12.1",
        ("toolz/itertoolz.py", "toolz/dicttoolz.py", "toolz/functoolz.py", "toolz/recipes.py"),
        ("toolz/tests",),
    ),
    # boltons' tests/conftest.py implements pytest_ignore_collect(path, ...), which pytest 9 rejects.
    "boltons": Library(
        "boltons",
        "24.0.0",
        "boltons-24.0.0",
        (
            "boltons/iterutils.py",
            "boltons/strutils.py",
            "boltons/dictutils.py",
            "boltons/setutils.py",
            "boltons/mathutils.py",
            "boltons/listutils.py",
            "boltons/cacheutils.py",
            "boltons/queueutils.py",
            "boltons/formatutils.py",
        ),
        ("tests",),
        pytest="pytest==7.4.4",
    ),
}


@dataclass(frozen=True)
class Mutant:
    path: str
    function: str
    edit: SourceEdit
    bug: Bug


def splice_of(path: str, original: str, edit: SourceEdit) -> Bug | None:
    """The edit as one splice confined to one line, or None (multi-line edits are not one-line bugs)."""
    new = edit.new_source
    prefix = 0
    limit = min(len(original), len(new))
    while prefix < limit and original[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and original[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    old_span = original[prefix : len(original) - suffix]
    new_span = new[prefix : len(new) - suffix]
    if "\n" in old_span or "\n" in new_span:
        return None
    line = original.count("\n", 0, prefix) + 1
    return Bug(path=path, line=line, start=prefix, original=old_span, mutated=new_span, template=edit.template)


def bug_report(run: TestRun, failing: Sequence[str]) -> str:
    """What a user would file: which tests fail and their assertion output. No traceback, no source location."""
    parts = [f"{len(failing)} test(s) fail after a recent change:", ""]
    for nodeid in failing[:8]:
        result = run.results[nodeid]
        message = "\n".join(result.message.strip().splitlines()[:6])[:400]
        parts.append(f"- `{nodeid}`: {result.exc_type or result.status.value}")
        if message:
            parts += ["", "  ```", *("  " + ln for ln in message.splitlines()), "  ```"]
    if len(failing) > 8:
        parts.append(f"- ... and {len(failing) - 8} more")
    return "\n".join(parts) + "\n"


def enumerate_mutants(
    tree: Path, library: Library, covered: dict[str, set[int]], seed: int, limit: int, sites: int = 400
) -> list[Mutant]:
    """Up to ``limit`` one-line mutants at ``sites`` random covered body lines, interleaved by kind.

    Without the interleaving, ``name_replace`` (every identifier, many alternatives) would crowd out the
    operator, comparison and off-by-one slips that real one-line bugs are as often made of.
    """
    rng = random.Random(seed)
    sources = {path: (tree / path).read_text(encoding="utf-8") for path in library.modules}
    spans = {path: function_spans(path, text) for path, text in sources.items()}
    all_sites = [(path, line) for path in library.modules for line in sorted(covered.get(path, ()))]
    rng.shuffle(all_sites)
    by_kind: dict[str, list[Mutant]] = defaultdict(list)
    seen: set[str] = set()
    for path, line in all_sites[:sites]:
        inside = [s for s in spans[path] if s.start < line <= s.end]  # body lines, not the def line
        if not inside:
            continue
        function = max(inside, key=lambda s: s.start).name
        edits = [e for e in candidate_edits(sources[path], path, [line], max_per_line=60) if e.template in BUG_KINDS]
        rng.shuffle(edits)
        kinds: set[str] = set()
        for edit in edits:
            if edit.template in kinds or edit.normalized in seen:
                continue  # one mutant per kind per line
            bug = splice_of(path, sources[path], edit)
            if bug is None or bug.line != line:
                continue
            seen.add(edit.normalized)
            kinds.add(edit.template)
            by_kind[edit.template].append(Mutant(path, function, edit, bug))
    ordered: list[Mutant] = []
    kinds_sorted = sorted(by_kind)
    while len(ordered) < limit and any(by_kind.values()):
        for kind in kinds_sorted:
            if by_kind[kind] and len(ordered) < limit:
                ordered.append(by_kind[kind].pop())
    return ordered


class _Pool:
    """Sandboxes on scratch copies of the pristine tree, one per worker thread."""

    def __init__(self, tree: Path, python: str, workers: int, wall: float) -> None:
        self.sandboxes = [
            PytestSandbox(tree, [python, "-m", "pytest"], limits=Limits(wall_seconds=wall)) for _ in range(workers)
        ]
        self.free = list(self.sandboxes)
        self.lock = threading.Lock()

    def take(self) -> PytestSandbox:
        with self.lock:
            return self.free.pop()

    def give(self, box: PytestSandbox) -> None:
        with self.lock:
            self.free.append(box)

    def close(self) -> None:
        for box in self.sandboxes:
            box.close()


def _outcome(run: TestRun, suite: Sequence[str]) -> tuple[str, ...]:
    return tuple(n for n in suite if n not in run.results or run.results[n].status is not TestStatus.PASSED)


def generate(
    library: Library,
    out: Path,
    *,
    max_tasks: int,
    max_mutants: int,
    workers: int = 2,
    seed: int = 0,
    per_function: int = 2,
    log: Callable[[str], None] = print,
) -> list[Task]:
    archive = fetch_sdist(library.name, library.version)
    digest = sha256_of(archive)
    source = {
        "kind": "sdist",
        "name": library.name,
        "version": library.version,
        "filename": archive.name,
        "sha256": digest,
        "root": library.root,
    }
    probe = Task("probe", source, Bug("", 0, 0, "", ""), (), (), "", library.test_paths, library.pytest)
    with tempfile.TemporaryDirectory(prefix="selfix-gen-") as tmp:
        tree = probe.materialize(Path(tmp) / "repo", fixed=True)
        tasks = generate_from_tree(
            library,
            source,
            tree,
            probe.python(),
            max_tasks=max_tasks,
            max_mutants=max_mutants,
            workers=workers,
            seed=seed,
            per_function=per_function,
            log=log,
        )
    out.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        (out / f"{task.id}.json").write_text(task.to_json(), encoding="utf-8")
    log(f"{library.name}: wrote {len(tasks)} task(s) to {out}")
    return tasks


def generate_from_tree(
    library: Library,
    source: dict,
    tree: Path,
    python: str,
    *,
    max_tasks: int,
    max_mutants: int,
    workers: int = 2,
    seed: int = 0,
    per_function: int = 2,
    log: Callable[[str], None] = print,
) -> list[Task]:
    """Validated tasks from mutants of the correct library tree ``tree`` (unchanged: work happens on copies)."""
    pool = _Pool(tree, python, workers, wall=60.0)
    try:
        box = pool.sandboxes[0]
        first = box.run_tests(None, coverage=True)
        second = box.run_tests(None)
        suite = sorted(n for n in first.passing() if n in set(second.passing()))
        left_out = len(set(first.results) | set(second.results)) - len(suite)
        log(f"{library.name}: {len(suite)} tests pass on two baseline runs ({left_out} left out)")
        if not suite:
            return []
        covered: dict[str, set[int]] = defaultdict(set)
        for files in (first.coverage or {}).values():
            for path, lines in files.items():
                covered[path].update(lines)
        mutants = enumerate_mutants(tree, library, covered, seed, max_mutants)
        log(f"{library.name}: {len(mutants)} candidate mutants to validate")
        return _validate(library, source, mutants, suite, pool, max_tasks, per_function, log)
    finally:
        pool.close()


def _validate(
    library: Library,
    source: dict,
    mutants: list[Mutant],
    suite: list[str],
    pool: _Pool,
    max_tasks: int,
    per_function: int,
    log: Callable[[str], None],
) -> list[Task]:
    kept: list[Task] = []
    lock = threading.Lock()
    seen_behaviour: set[tuple] = set()
    per_func: dict[tuple[str, str], int] = defaultdict(int)
    per_kind: dict[str, int] = defaultdict(int)
    reasons: dict[str, int] = defaultdict(int)
    limit = max(1, int(len(suite) * MAX_BROKEN_FRACTION))
    stop = threading.Event()

    def check(mutant: Mutant) -> None:
        if stop.is_set():
            return
        with lock:
            if per_func[(mutant.path, mutant.function)] >= per_function:
                reasons["function already has enough tasks"] += 1
                return
            if per_kind[mutant.bug.template] >= max(2, int(max_tasks * MAX_KIND_FRACTION)):
                reasons["kind quota reached"] += 1
                return
        box = pool.take()
        try:
            with box.patched({mutant.path: mutant.edit.new_source}):
                run = box.run_tests(None)
                failing = _outcome(run, suite)
                if not failing:
                    reasons["equivalent (no test fails)"] += 1
                    return
                if len(failing) > limit:
                    reasons["breaks more than 25% of the suite"] += 1
                    return
                extra = [n for n in run.results if n not in suite and run.results[n].status is not TestStatus.PASSED]
                if extra or run.timed_out:
                    reasons["unstable or timed-out run"] += 1
                    return
                again = box.run_tests(None)
                if _outcome(again, suite) != failing:
                    reasons["different failing set on the second run"] += 1
                    return
        finally:
            pool.give(box)
        report = bug_report(run, failing)
        leaks = leak_reasons(report, mutant.bug, mutant.edit.new_source)
        if leaks:
            reasons["bug report leaks: " + leaks[0].split(" ")[0] + " " + leaks[0].split(" ")[1]] += 1
            return
        behaviour = (mutant.path, mutant.function, failing, tuple(run.results[n].message[:200] for n in failing))
        digest = hashlib.sha256(mutant.edit.normalized.encode()).hexdigest()[:8]
        task = Task(
            # Opaque: the name of a task says nothing of where the bug is or what kind it is.
            id=f"{library.name}-{digest}",
            source=source,
            bug=mutant.bug,
            f2p=failing,
            p2p=tuple(n for n in suite if n not in failing),
            bug_report=report,
            test_paths=library.test_paths,
            pytest=library.pytest,
            meta={"function": mutant.function, "suite_size": len(suite)},
        )
        with lock:
            if behaviour in seen_behaviour:
                reasons["equivalent to a kept mutant"] += 1
                return
            if per_func[(mutant.path, mutant.function)] >= per_function or len(kept) >= max_tasks:
                return
            if per_kind[mutant.bug.template] >= max(2, int(max_tasks * MAX_KIND_FRACTION)):
                reasons["kind quota reached"] += 1
                return
            per_kind[mutant.bug.template] += 1
            seen_behaviour.add(behaviour)
            per_func[(mutant.path, mutant.function)] += 1
            kept.append(task)
            log(f"  kept {task.id} (F2P {len(failing)})")
            if len(kept) >= max_tasks:
                stop.set()

    with ThreadPoolExecutor(max_workers=len(pool.sandboxes)) as executor:
        list(executor.map(check, mutants))
    for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
        log(f"  dropped {count}: {reason}")
    return sorted(kept, key=lambda t: t.id)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate validated bug-injection benchmark tasks.")
    parser.add_argument("--library", choices=sorted(LIBRARIES), action="append", required=True)
    parser.add_argument("--out", type=Path, default=Path("bench/tasks"))
    parser.add_argument("--max-tasks", type=int, default=40, help="tasks per library")
    parser.add_argument("--max-mutants", type=int, default=400, help="mutants to validate per library at most")
    parser.add_argument("--per-function", type=int, default=2, help="tasks per function at most")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"cache: {CACHE_DIR}", flush=True)
    for name in args.library:
        generate(
            LIBRARIES[name],
            args.out,
            max_tasks=args.max_tasks,
            max_mutants=args.max_mutants,
            workers=args.workers,
            seed=args.seed,
            per_function=args.per_function,
            log=lambda m: print(m, flush=True),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
