"""Do the tests a heal took as evidence hold on the developers' fix? A generated test that fails on the fixed code
was never evidence of the fix, whatever it did on the unpatched code.

For every task of a run, the QA reproduction tests that exposed their hypothesis and the property tests that found
their counterexample on the unpatched code (read from the run's transcripts) run on a fresh tree of the fixed
commit, in the product's sandbox with the task's environment (Hypothesis from selfix's cache for the property
tests, appended to ``sys.path`` as the heal did):

    python -m selfix_bench.gate_check RUN_DIR TASKS_DIR --mirror-dir DIR

It prints one line per test and the counts: held on the developers' fix, or failed there (and how).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from selfix_action.repair.paths import QA_TEST_DIR
from selfix_action.sandbox.hypothesis_lib import default_cache_root
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_bench.kinds import load_bench_task
from selfix_bench.realbugs import RealBugTask, set_mirror_dir

TIMEOUT = 300


def gated_tests(transcript: Path) -> Iterator[tuple[str, str, str]]:
    """(kind, file name, source) of each test the heal used as evidence."""
    for line in transcript.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("step") == "expose" and event.get("exposed") and event.get("qa_test"):
            yield "qa", str(event.get("qa_path") or "test_qa.py"), str(event["qa_test"])
        elif event.get("step") == "property" and event.get("used") and event.get("source"):
            yield "property", f"test_property_{event.get('hypothesis', 'h').lower()}.py", str(event["source"])


def _python_version(python: str) -> str:
    """``3.11`` for a virtual environment's interpreter, from its ``pyvenv.cfg`` (nothing is run)."""
    config = Path(python).parent.parent / "pyvenv.cfg"
    for line in config.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return ".".join(value.strip().split(".")[:2])
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def run_on_fixed(task: RealBugTask, tests: Sequence[tuple[str, str, str]], workdir: Path) -> list[tuple[str, str]]:
    """Each test's verdict on the fixed commit, run in the product's sandbox: "held", or "failed: <why>"."""
    tree = task.materialize(workdir / "fixed", fixed=True)
    python = task.python()
    hypothesis = default_cache_root({"HOME": str(Path.home())}) / f"py{_python_version(python)}"
    conftest = {f"{QA_TEST_DIR}/conftest.py": f"import sys\nsys.path.append({str(hypothesis)!r})\n"}
    verdicts = []
    with PytestSandbox(tree, [python, "-m", "pytest"], limits=Limits(wall_seconds=TIMEOUT)) as sandbox:
        for kind, name, source in tests:
            path = f"{QA_TEST_DIR}/{name}"
            run = sandbox.run_tests([path], extra_test_files={**conftest, path: source})
            results = [r for n, r in run.results.items() if n.startswith(path)]
            failed = [r for r in results if not r.ok]
            if results and not failed:
                verdicts.append((kind, "held"))
            else:
                why = f"{failed[0].exc_type}: {failed[0].message[:120]}" if failed else (run.error or "not run")[:160]
                verdicts.append((kind, "failed: " + " ".join(why.split())))
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
