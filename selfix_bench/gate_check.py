"""Do the tests a heal took as evidence hold on the developers' fix? A generated test that fails on the fixed code
was never evidence of the fix, whatever it did on the unpatched code.

For every task of a run, the QA reproduction tests that exposed their hypothesis and the property tests that found
their counterexample on the unpatched code (read from the run's transcripts) run on a fresh tree of the fixed
commit, in the task's environment (Hypothesis from selfix's cache for the property tests, appended to
``sys.path`` as the heal did):

    python -m selfix_bench.gate_check RUN_DIR TASKS_DIR --mirror-dir DIR

It prints one line per test and the counts: held on the developers' fix, or failed there (and how).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from selfix_action.sandbox.hypothesis_lib import default_cache_root
from selfix_bench.kinds import load_bench_task
from selfix_bench.realbugs import RealBugTask, set_mirror_dir

QA_DIR = "_selfix_gate"
TIMEOUT = 300


def gated_tests(transcript: Path) -> Iterator[tuple[str, str, str]]:
    """(kind, file name, source) of each test the heal used as evidence."""
    for line in transcript.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("step") == "expose" and event.get("exposed") and event.get("qa_test"):
            yield "qa", str(event.get("qa_path") or "test_qa.py"), str(event["qa_test"])
        elif event.get("step") == "property" and event.get("used") and event.get("source"):
            yield "property", f"test_property_{event.get('hypothesis', 'h').lower()}.py", str(event["source"])


def run_on_fixed(task: RealBugTask, tests: Sequence[tuple[str, str, str]], workdir: Path) -> list[tuple[str, str]]:
    """Each test's verdict on the fixed commit: "held", or "failed: <last line>"."""
    tree = task.materialize(workdir / "fixed", fixed=True)
    folder = tree / QA_DIR
    folder.mkdir()
    version = subprocess.run(
        [task.python(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    hypothesis = default_cache_root({"HOME": str(Path.home())}) / f"py{version}"
    (folder / "conftest.py").write_text(f"import sys\nsys.path.append({str(hypothesis)!r})\n", encoding="utf-8")
    verdicts = []
    for kind, name, source in tests:
        (folder / name).write_text(source, encoding="utf-8")
        proc = subprocess.run(
            [task.python(), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{QA_DIR}/{name}"],
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env={"PATH": "/usr/bin:/bin", "HOME": str(workdir), "PYTHONPATH": str(tree)},
        )
        last = (proc.stdout.strip().splitlines() or [""])[-1]
        verdicts.append((kind, "held" if proc.returncode == 0 else f"failed: {last[:160]}"))
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.gate_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--mirror-dir", type=Path)
    args = parser.parse_args(argv)
    set_mirror_dir(args.mirror_dir)
    counts: dict[tuple[str, bool], int] = {}
    for transcript in sorted((args.run / "transcripts").glob("*.jsonl")):
        tests = list(gated_tests(transcript))
        task_file = args.tasks / f"{transcript.stem}.json"
        if not tests or not task_file.is_file():
            continue
        task = load_bench_task(task_file)
        assert isinstance(task, RealBugTask)
        with tempfile.TemporaryDirectory(prefix="selfix-gate-") as tmp:
            for (kind, name, _), (_, verdict) in zip(tests, run_on_fixed(task, tests, Path(tmp)), strict=True):
                print(f"{task.id}\t{kind}\t{name}\t{verdict}")
                held = verdict == "held"
                counts[(kind, held)] = counts.get((kind, held), 0) + 1
    for kind in ("qa", "property"):
        kept, failed = counts.get((kind, True), 0), counts.get((kind, False), 0)
        print(f"{kind}: {kept} held on the developers' fix, {failed} failed there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
