"""The sandbox differential: does any test of the benchmark's tasks have another outcome inside selfix's
sandbox than outside it?

    python -m selfix_bench.differential bench/tasks bench/realbugs/tasks --mirror-dir DIR \\
        [--levels bwrap,landlock,unshare,none] [--out results/differential]

For every task, the buggy tree runs its test command (a mutant task: the whole suite; a real bug: the changed
test modules) once outside any sandbox (a plain ``pytest`` in the caller's own environment: our trusted,
pinned tasks only) and once inside ``PytestSandbox`` at each isolation level that works here. A test whose
outcome differs fails (or passes) because of the sandbox, not the code: healing it would patch code that is
right (issue: a cache under the home folder). Writes ``OUT/<task>.json`` per task and ``OUT/report.md``;
exits 1 when any test differs, so a regression shows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfix_action.errors import SandboxError
from selfix_action.junit import parse_reports
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.isolation import IsolationConfig, detect_isolation
from selfix_action.sandbox.process import Limits, run_process
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench import realbugs
from selfix_bench.base import BenchTask
from selfix_bench.kinds import load_bench_tasks
from selfix_bench.tasks import Task

LEVELS = ("bwrap", "landlock", "unshare", "none")
WALL_SECONDS = 600.0


def _tree_and_command(task: BenchTask, dest: Path, buggy: bool = True) -> tuple[Path, list[str]]:
    return task.materialize(dest, fixed=not buggy), list(task.test_command(task.python()))


def per_tree(tasks: Sequence[BenchTask]) -> list[tuple[BenchTask, list[str]]]:
    """One representative per distinct tree: every real-bug task is its own tree; mutant tasks of one pinned
    library share it (a one-line bug apart, which only moves the tests it breaks, failing inside and outside
    alike), so the library's unmutated tree stands for all of them. (task, the ids it stands for)."""
    groups: dict[str, tuple[BenchTask, list[str]]] = {}
    for task in tasks:
        key = json.dumps(task.source, sort_keys=True) + task.pytest if isinstance(task, Task) else task.id
        groups.setdefault(key, (task, []))[1].append(task.id)
    return list(groups.values())


def outside(repo: Path, command: Sequence[str], workdir: Path) -> dict[str, dict[str, str]]:
    """The tests' outcomes in a plain pytest run with this process's own environment (no sandbox at all)."""
    junit = workdir / "outside.xml"
    result = run_process(
        [*command, "-p", "no:cacheprovider", f"--junitxml={junit}", "-q"],
        cwd=repo,
        env=dict(os.environ),
        limits=Limits(wall_seconds=WALL_SECONDS),
    )
    if not junit.is_file():
        raise SandboxError(f"the plain pytest run wrote no report (exit {result.returncode}): {result.stderr[-500:]}")
    report = parse_reports([junit])
    return {
        case.nodeid: {"status": case.outcome.value, "message": (case.message or "")[:300]}
        for case in report.cases
        if case.nodeid
    }


def inside(repo: Path, command: Sequence[str], level: str) -> dict[str, dict[str, str]]:
    """The tests' outcomes in selfix's sandbox at ``level`` (SandboxError: the level does not work here)."""
    isolation = detect_isolation(IsolationConfig(mode=level))
    with PytestSandbox(repo, command, limits=Limits(wall_seconds=WALL_SECONDS), isolation=isolation, hot=False) as box:
        run = box.run_tests(None)
    if not run.results and run.error:
        raise SandboxError(run.error)
    return {
        nodeid: {"status": result.status.value, "message": f"{result.exc_type}: {result.message}"[:300]}
        for nodeid, result in run.results.items()
    }


def differences(reference: dict[str, dict[str, str]], other: dict[str, dict[str, str]]) -> list[dict[str, str]]:
    """Tests both runs reported whose outcome differs (skips count as passes: a skip is not a failure)."""

    def passed(status: str) -> bool:
        return status in (TestStatus.PASSED.value, TestStatus.SKIPPED.value)

    out = []
    for nodeid in sorted(set(reference) & set(other)):
        a, b = reference[nodeid], other[nodeid]
        if passed(a["status"]) != passed(b["status"]):
            out.append(
                {"test": nodeid, "outside": a["status"], "inside": b["status"], "message": b["message"] or a["message"]}
            )
    return out


def run_task(task: BenchTask, levels: Sequence[str], stands_for: Sequence[str] = ()) -> dict[str, Any]:
    """Outside vs inside at each level for ``task``'s tree (a mutant task standing for others: its library's
    unmutated tree)."""
    shared = len(stands_for) > 1
    record: dict[str, Any] = {"id": task.id, "levels": {}, "stands_for": list(stands_for or [task.id])}
    with tempfile.TemporaryDirectory(prefix="selfix-diff-") as tmp:
        repo, command = _tree_and_command(task, Path(tmp) / "repo", buggy=not shared)
        try:
            reference = outside(repo, command, Path(tmp))
        except SandboxError as exc:
            record["error"] = f"outside: {exc}"
            return record
        record["tests"] = len(reference)
        for level in levels:
            try:
                ran = inside(repo, command, level)
            except SandboxError as exc:
                record["levels"][level] = {"unavailable": str(exc)[:300]}
                continue
            record["levels"][level] = {
                "compared": len(set(reference) & set(ran)),
                "only_one_side": len(set(reference) ^ set(ran)),
                "differ": differences(reference, ran),
            }
    return record


def render(records: Sequence[dict[str, Any]], levels: Sequence[str]) -> str:
    covered = sum(len(r.get("stands_for", [r["id"]])) for r in records)
    lines = [
        "# Sandbox differential",
        "",
        f"{len(records)} tree(s) standing for {covered} task(s); outcome inside vs a plain pytest run outside.",
        "",
    ]
    lines += [
        "| level | tasks compared | tests compared | tests that differ | tasks with a difference |",
        "|---|---:|---:|---:|---:|",
    ]
    for level in levels:
        ran = [r["levels"][level] for r in records if "differ" in r.get("levels", {}).get(level, {})]
        differ = sum(len(x["differ"]) for x in ran)
        lines.append(
            f"| {level} | {len(ran)} | {sum(x['compared'] for x in ran)} | {differ} | "
            f"{sum(1 for x in ran if x['differ'])} |"
        )
    rows = [
        (r["id"], level, d)
        for r in records
        for level in levels
        for d in r.get("levels", {}).get(level, {}).get("differ", [])
    ]
    if rows:
        lines += ["", "| task | level | test | outside | inside | message |", "|---|---|---|---|---|---|"]
        for ident, level, d in rows:
            message = d["message"].replace("|", "\\|").replace("\n", " ")[:160]
            lines.append(f"| {ident} | {level} | `{d['test']}` | {d['outside']} | {d['inside']} | {message} |")
    errors = [(r["id"], r["error"]) for r in records if r.get("error")]
    errors += [
        (r["id"], f"{level}: {x['unavailable']}")
        for r in records
        for level, x in r.get("levels", {}).items()
        if "unavailable" in x
    ]
    if errors:
        lines += ["", "Not compared:", ""] + [f"- {ident}: {why}" for ident, why in errors]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", type=Path, help="task folders or files")
    parser.add_argument("--levels", default=",".join(LEVELS), help=f"isolation levels ({','.join(LEVELS)})")
    parser.add_argument("--mirror-dir", type=Path, help="local git mirrors for real-bug tasks")
    parser.add_argument("--out", type=Path, default=Path("results/differential"))
    parser.add_argument("--match", default="", help="only tasks whose id contains this")
    parser.add_argument(
        "--per-tree",
        action="store_true",
        help="one run per distinct tree: mutant tasks of one library share its unmutated tree (per_tree)",
    )
    args = parser.parse_args(argv)
    realbugs.set_mirror_dir(args.mirror_dir)
    levels = [level for level in args.levels.split(",") if level]
    args.out.mkdir(parents=True, exist_ok=True)
    records = []
    tasks = [t for folder in args.tasks for t in load_bench_tasks(folder) if args.match in t.id]
    for task, stands_for in per_tree(tasks) if args.per_tree else [(t, [t.id]) for t in tasks]:
        done = args.out / f"{task.id}.json"
        if done.is_file():  # resumable: a task already compared is read back
            records.append(json.loads(done.read_text(encoding="utf-8")))
            continue
        record = run_task(task, levels, stands_for)
        done.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        records.append(record)
        differ = {lv: len(x.get("differ", [])) for lv, x in record["levels"].items()}
        error = f" {record['error']}" if record.get("error") else ""
        print(f"{task.id} (stands for {len(stands_for)}): {record.get('tests', 0)} tests; differ {differ}{error}")
    (args.out / "report.md").write_text(render(records, levels), encoding="utf-8")
    print((args.out / "report.md").read_text(encoding="utf-8"))
    return 1 if any(x.get("differ") for r in records for x in r["levels"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
