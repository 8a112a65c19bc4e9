"""``selfix bench``: run a directory of tasks in parallel workers, resumably, and summarize.

Each task runs in its own ``python -m selfix_bench.worker`` process with a hard timeout (the per-task
time limit plus set-up and judging time). Records are appended to ``results/<run>/results.jsonl`` as tasks
finish; a rerun with the same run name skips the tasks already recorded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfix_bench.base import BenchTask
from selfix_bench.kinds import load_bench_tasks
from selfix_bench.report import read_reviews, write_report
from selfix_bench.worker import API_KEY_VARIABLE

SETUP_GRACE_SECONDS = 180.0


@dataclass(frozen=True)
class BenchOptions:
    tasks: Path
    out: Path = Path("results")
    run: str = ""
    mode: str = "offline"  # offline | oracle | noop | module:factory
    workers: int = 2
    time_limit: float = 300.0
    max_candidates: int = 500
    compare: Path | None = None  # another run's directory, for the paired comparison
    limit: int = 0  # run only the first N tasks (0: all)
    mirror_dir: Path | None = None  # local git mirrors for real-bug tasks (else their public URLs)
    engine_json: str = ""  # a named engine's flags (EngineChoice fields, no key) as JSON; see worker.engine_choice
    isolation: str = "none"  # the sandbox's isolation level for the heals
    api_key: str = ""  # --api-key: reaches the workers through their environment, never their argv
    junit: bool = False  # each heal gets the CI's JUnit report of its task (F2P failing, P2P passing)
    # each heal gets only the traceback of its failing test's exception, as production would report it
    # (selfix fix --from-error): no failing test named, no bug report
    from_traceback: bool = False


def read_records(path: Path) -> list[dict[str, Any]]:
    records = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by an interrupted run; that task is run again
    return records


def _task_file(task: BenchTask) -> Path:
    return Path(task.base_dir) / f"{task.id}.json"


def run_one(task: BenchTask, task_file: Path, options: BenchOptions, transcript: Path | None = None) -> dict[str, Any]:
    """One task in its own worker process; ``transcript`` keeps the heal's trace (every prompt and answer)."""
    argv = [
        sys.executable,
        "-m",
        "selfix_bench.worker",
        str(task_file),
        "--mode",
        options.mode,
        "--time-limit",
        str(options.time_limit),
        "--max-candidates",
        str(options.max_candidates),
        "--isolation",
        options.isolation,
        *(["--engine-json", options.engine_json] if options.engine_json else []),
        *(["--transcript", str(transcript)] if transcript is not None else []),
        *(["--junit"] if options.junit else []),
        *(["--from-traceback"] if options.from_traceback else []),
        *(["--mirror-dir", str(options.mirror_dir)] if options.mirror_dir else []),
    ]
    env = {**os.environ, **({API_KEY_VARIABLE: options.api_key} if options.api_key else {})}
    started = time.monotonic()
    base = {"id": task.id, "library": task.library, "mode": options.mode, "kind": task.kind}
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=options.time_limit + SETUP_GRACE_SECONDS,
            check=False,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {
            **base,
            "resolved": False,
            "error": "time limit",
            "seconds": round(time.monotonic() - started, 3),
            "test_runs": 0,
            "candidates": 0,
            "patch": "",
        }
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        return {
            **base,
            "resolved": False,
            "error": f"worker exit {proc.returncode}: {tail}",
            "seconds": round(time.monotonic() - started, 3),
            "test_runs": 0,
            "candidates": 0,
            "patch": "",
        }
    return json.loads(lines[-1])


def run_module(argv: list[str], timeout: float) -> tuple[int, str]:
    """``python -m argv...`` of selfix itself with a timeout (its process group killed): exit code, stderr tail."""
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return -1, "time limit"
    return proc.returncode, "\n".join(err.strip().splitlines()[-5:])


def _interleave(tasks: list[BenchTask]) -> list[BenchTask]:
    """Round-robin over libraries, so a run stopped early still samples every library alike."""
    groups: dict[str, list[BenchTask]] = {}
    for task in tasks:
        groups.setdefault(task.library, []).append(task)
    ordered: list[BenchTask] = []
    queues = list(groups.values())
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def run_bench(options: BenchOptions, log: Callable[[str], None] = print) -> Path:
    tasks = load_bench_tasks(options.tasks)
    if options.limit:
        tasks = tasks[: options.limit]
    name = options.run or options.mode.replace(":", "-")
    run_dir = options.out / name
    run_dir.mkdir(parents=True, exist_ok=True)
    results = run_dir / "results.jsonl"
    if results.exists() and not results.read_bytes().endswith(b"\n") and results.stat().st_size:
        with open(results, "a", encoding="utf-8") as handle:
            handle.write("\n")  # close a line cut short by an interrupted run; read_records skips it
    done = {r["id"] for r in read_records(results) if r.get("mode") == options.mode}
    pending = _interleave([t for t in tasks if t.id not in done])
    (run_dir / "meta.json").write_text(
        json.dumps(
            {
                "tasks": str(options.tasks),
                "mode": options.mode,
                "workers": options.workers,
                "time_limit": options.time_limit,
                "isolation": options.isolation,
                "junit": options.junit,
                "from_traceback": options.from_traceback,
                "engine": json.loads(options.engine_json) if options.engine_json else None,
                "task_count": len(tasks),
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    log(
        f"{len(tasks)} task(s), {len(done & {t.id for t in tasks})} already recorded, {len(pending)} to run "
        f"with {options.workers} worker(s) -> {run_dir}"
    )
    lock = threading.Lock()
    counter = {"done": 0, "resolved": 0}

    def work(task: BenchTask) -> None:
        record = run_one(task, _task_file(task), options, run_dir / "transcripts" / f"{task.id}.jsonl")
        with lock:
            with open(results, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
            counter["done"] += 1
            counter["resolved"] += bool(record.get("resolved"))
            log(
                f"[{counter['done']}/{len(pending)}] {task.id}: {'RESOLVED' if record.get('resolved') else 'no'} "
                f"{record.get('seconds', 0):.1f}s runs={record.get('test_runs', 0)} "
                f"cands={record.get('candidates', 0)}{' ' + record['error'] if record.get('error') else ''}"
            )

    with ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
        list(pool.map(work, pending))
    ids = {t.id for t in tasks}
    records = [r for r in read_records(results) if r.get("mode") == options.mode and r["id"] in ids]
    other = None
    if options.compare is not None:
        other = read_records(options.compare / "results.jsonl")
    reviews = read_reviews((options.tasks if options.tasks.is_dir() else options.tasks.parent).parent / "reviewed.json")
    write_report(run_dir, records, name, other, options.compare.name if options.compare else "", reviews)
    return run_dir
