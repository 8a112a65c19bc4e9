"""Measure the LLM engine's prompt size per role on the bundled examples, against a baseline that sends whole
files (the suspect files and the failing test files, in full, instead of syntax-tree slices).

For each example it runs the real healing loop (real pytest, real localization) with the LLM engine over an
in-process scripted model, records every request the Detective, QA and Patcher roles send (system prompt +
shared context + role message), and builds the baseline request for the same role from the same evidence.
Sizes are characters and a rough token estimate (chars / 4); the ratio is baseline / selfix.
``--pad N`` appends N unrelated helper functions to each example's source files first, to show how the two
grow with file size (real modules are rarely 30 lines long). ``--tasks DIR`` measures real libraries instead:
the benchmark's bug-injected toolz/boltons tasks (fetched from PyPI by pinned sha256, see
selfix_bench/tasks.py), the Patcher scripted with each task's reference fix.

    .venv/bin/python -m selfix_bench.prompt_size [--pad N] [EXAMPLE ...]
    .venv/bin/python -m selfix_bench.prompt_size --tasks bench/tasks --match toolz --limit 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfix_action.heal import HealRequest
from selfix_action.llm.budget import Budget
from selfix_action.llm.engine import LLMEngine
from selfix_action.llm.prompts import SYSTEM_PROMPT, baseline_context, patcher_request
from selfix_action.providers.base import ModelRequest, ModelResponse, PreflightResult, TokenUsage
from selfix_action.repair.paths import is_test_path
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.values import Evidence, Hypothesis
from selfix_action.sandbox.isolation import IsolationConfig
from selfix_action.sandbox.process import Limits
from selfix_bench.healing import heal_with
from selfix_bench.tasks import Task, load_tasks

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ROLES = ("detective", "qa", "patcher")
TOOL_ROLE = {"report_hypotheses": "detective", "write_reproduction_test": "qa", "propose_edits": "patcher"}


def request_chars(request: ModelRequest) -> int:
    return len(request.system) + len(request.context) + sum(len(m.content) for m in request.messages)


class ScriptedModel:
    """Answers each role once with something valid for the example (the expected fix), recording requests."""

    provider = "scripted"
    model = "scripted"
    structured = "tools"

    def step_down(self) -> str | None:
        return None

    def preflight(self) -> PreflightResult:
        return PreflightResult(models=(self.model,))

    def __init__(self, fix: dict[str, Any]) -> None:
        self.fix = fix
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        line = int(self.fix["line"])
        answers: dict[str, dict[str, Any]] = {
            "report_hypotheses": {
                "hypotheses": [
                    {
                        "title": "the line named in expected_fixes.json is wrong",
                        "confidence": 0.9,
                        "file": self.fix["file"],
                        "symbol": "<module>",
                        "line_start": line,
                        "line_end": line,
                        "reasoning": "benchmark",
                        "proposed_fix": self.fix["fixed"],
                    }
                ]
            },
            # A QA test that always fails: enough to reach the Patcher once (no heal is needed to measure).
            "write_reproduction_test": {
                "test_source": "def test_qa():\n    assert False, 'benchmark placeholder'\n",
                "expected_failure": "AssertionError",
            },
            "propose_edits": {
                "explanation": "the expected fix",
                "edits": [{"file": self.fix["file"], "search": self.fix["buggy"], "replace": self.fix["fixed"]}],
            },
            "review_patch": {"verdict": "complete", "reason": "benchmark placeholder"},
        }
        answer = answers[request.tool]
        return ModelResponse(json.dumps(answer), request.tool, answer, TokenUsage(), "scripted")


class MeasuringEngine(LLMEngine):
    """The real engine; also keeps the evidence it built its context from."""

    evidence: Evidence | None = None
    hypothesis: Hypothesis | None = None

    def _context_of(self, evidence: Evidence, sandbox: Sandbox) -> str:
        self.evidence = evidence
        return super()._context_of(evidence, sandbox)

    def candidates(self, hypothesis: Hypothesis, *args: Any, **kwargs: Any) -> Any:
        self.hypothesis = hypothesis
        return super().candidates(hypothesis, *args, **kwargs)


def pad_sources(repo: Path, functions: int) -> None:
    filler = "".join(
        f"\n\ndef unrelated_helper_{n}(values, scale=1):\n"
        f'    """Helper {n}: scale and sum the positive values."""\n'
        f"    total = 0\n    for value in values:\n        if value > 0:\n"
        f"            total += value * scale + {n}\n    return total\n"
        for n in range(functions)
    )
    for path in repo.rglob("*.py"):
        rel = path.relative_to(repo).as_posix()
        if not is_test_path(rel):
            path.write_text(path.read_text(encoding="utf-8") + filler, encoding="utf-8")


def measure(example: Path, fix: dict[str, Any], pad: int) -> dict[str, tuple[int, int]]:
    """role -> (selfix chars, baseline chars)."""
    with tempfile.TemporaryDirectory(prefix="selfix-prompt-") as tmp:
        repo = Path(tmp) / example.name
        shutil.copytree(example, repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
        if pad:
            pad_sources(repo, pad)
        return measure_repo(repo, fix)


def measure_task(task: Task) -> dict[str, tuple[int, int]]:
    """The same on a benchmark task: the real library with its injected bug; the reference fix scripted."""
    with tempfile.TemporaryDirectory(prefix="selfix-prompt-") as tmp:
        repo = task.materialize(Path(tmp) / task.id)
        lines = (repo / task.bug.path).read_text(encoding="utf-8").splitlines()
        buggy = lines[task.bug.line - 1]
        fixed = buggy.replace(task.bug.mutated, task.bug.original, 1)
        fix = {"file": task.bug.path, "line": task.bug.line, "buggy": buggy.strip(), "fixed": fixed.strip()}
        return measure_repo(repo, fix)


def measure_repo(repo: Path, fix: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """role -> (selfix chars, baseline chars) for one healing loop over ``repo``."""
    model = ScriptedModel(fix)
    engine = MeasuringEngine(model, Budget(model="scripted"), patch_retries=0)
    with tempfile.TemporaryDirectory(prefix="selfix-prompt-out-") as out:
        request = HealRequest(
            repo=repo,
            test_cmd=(sys.executable, "-m", "pytest"),
            out_dir=Path(out),
            limits=Limits(wall_seconds=300),
            isolation=IsolationConfig(mode="none"),
            repo_label=repo.name,
        )
        heal_with(request, engine)
    evidence = engine.evidence
    if evidence is None:
        raise SystemExit(f"{repo.name}: the engine was never asked")

    def read(path: str) -> str:  # the heal edits a scratch copy: the repo holds the sources the engine saw
        return (repo / path).read_text(encoding="utf-8")

    suspects = list(dict.fromkeys(s.file for s in evidence.suspicious_lines))
    tests = list(dict.fromkeys(n.split("::")[0] for n in evidence.f2p_tests))
    whole = baseline_context(evidence, read, suspects + tests)
    sizes: dict[str, tuple[int, int]] = {}
    for asked in model.requests:
        role = TOOL_ROLE[asked.tool]
        if role in sizes:
            continue
        message = asked.messages[0].content
        if role == "patcher" and engine.hypothesis is not None:
            # The baseline already sent the whole file in its context: refer to it, do not repeat it.
            where = f"(the whole of {engine.hypothesis.file}, shown above)"
            message = patcher_request(engine.hypothesis, where, [])
        baseline = len(SYSTEM_PROMPT) + len(whole) + len(message)
        sizes[role] = (request_chars(asked), baseline)
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", help="example names (default: all)")
    parser.add_argument("--pad", type=int, default=0, help="unrelated functions appended to each source file")
    parser.add_argument("--tasks", type=Path, help="benchmark task folder (real libraries) instead of the examples")
    parser.add_argument("--match", default="", help="with --tasks: only task ids containing this")
    parser.add_argument("--limit", type=int, default=3, help="with --tasks: this many tasks at most (3)")
    args = parser.parse_args(argv)
    jobs: list[tuple[str, Any]] = []
    if args.tasks is not None:
        tasks = [t for t in load_tasks(args.tasks) if args.match in t.id][: args.limit]
        jobs = [(t.id, lambda t=t: measure_task(t)) for t in tasks]
        print(f"prompt size per role on {len(tasks)} real-library task(s): selfix (slices) vs baseline (whole files)")
    else:
        fixes = json.loads((EXAMPLES / "expected_fixes.json").read_text(encoding="utf-8"))
        names = args.examples or sorted(fixes)
        jobs = [(n, lambda n=n: measure(EXAMPLES / n, fixes[n], args.pad)) for n in names]
        print(f"prompt size per role: selfix (slices) vs baseline (whole files); pad={args.pad} functions")
    header = f"{'example':<16}" + "".join(
        f" {role + ' chars':>16} {'~tok':>6} {'base ~tok':>9} {'ratio':>6}" for role in ROLES
    )
    print(header)
    ratios: dict[str, list[float]] = {role: [] for role in ROLES}
    totals = {role: [0, 0] for role in ROLES}
    for name, run in jobs:
        sizes = run()
        cells = []
        for role in ROLES:
            if role not in sizes:
                cells.append(f" {'-':>16} {'-':>6} {'-':>9} {'-':>6}")
                continue
            ours, base = sizes[role]
            ratios[role].append(base / ours)
            totals[role][0] += ours
            totals[role][1] += base
            cells.append(f" {ours:>16} {ours // 4:>6} {base // 4:>9} {base / ours:>6.2f}")
        print(f"{name:<16.16}" + "".join(cells), flush=True)
    print()
    for role in ROLES:
        if ratios[role]:
            ours, base = totals[role]
            print(
                f"{role:<10} median ratio baseline/selfix {statistics.median(ratios[role]):.2f}x, "
                f"total ~{ours // 4} vs ~{base // 4} tokens ({base / ours:.2f}x)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
