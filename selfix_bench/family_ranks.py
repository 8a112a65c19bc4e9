"""Where each mutant task's fix ranks in the offline engine's order at the bug's line, with and without some
template families: what a new family costs the tasks the others already fix. Static (no test runs), so it does
not depend on the machine's load; a live paired run is `selfix bench ... --compare`.

    .venv/bin/python -m selfix_bench.family_ranks [--tasks bench/tasks] [--without FAMILY ...]

The default families left out are the repairs real bugs need (issue 14) and the pairs of edits.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from selfix_action.offline.engine import OfflineEngine
from selfix_action.offline.ordering import RankedCandidate
from selfix_action.offline.templates import SourceEdit, registry
from selfix_action.offline.templates import candidates as pipeline
from selfix_action.repair.values import Evidence, Hypothesis, SuspiciousLine
from selfix_bench.tasks import apply_bug, load_tasks, pristine_tree

ISSUE_14 = ("unbound_name", "literal_to_name", "string_edit", "sibling_method", "keyword_add", "none_guard")


class _Files:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_file(self, path: str) -> str:
        return self.files[path]

    def source_files(self) -> list[str]:
        return sorted(self.files)


class _NoPairs(OfflineEngine):
    def _pairs(self, hypothesis: Hypothesis, items: list[RankedCandidate], sandbox: object) -> Iterator[SourceEdit]:
        return iter(())


@contextmanager
def _families_left_out(left_out: set[str]) -> Iterator[None]:
    """The candidate pipeline without some families, for the block only: the registry is process-wide, and a
    caller (a test, a notebook) goes on with every family afterwards."""
    kept = pipeline.EXPRESSION_FAMILIES, pipeline.STATEMENT_FAMILIES
    pipeline.EXPRESSION_FAMILIES = tuple(f for f in registry.EXPRESSION_FAMILIES if f.name not in left_out)
    pipeline.STATEMENT_FAMILIES = tuple(f for f in registry.STATEMENT_FAMILIES if f.name not in left_out)
    pipeline._expression_families.cache_clear()
    pipeline._statement_families.cache_clear()
    try:
        yield
    finally:
        pipeline.EXPRESSION_FAMILIES, pipeline.STATEMENT_FAMILIES = kept
        pipeline._expression_families.cache_clear()
        pipeline._statement_families.cache_clear()


def ranks(tasks_dir: Path, engine: Callable[[], OfflineEngine]) -> dict[str, tuple[int | None, int]]:
    """Task id -> (rank of the fix among the candidates at the bug's line or None, candidates there)."""
    out: dict[str, tuple[int | None, int]] = {}
    for task in load_tasks(tasks_dir):
        original = (pristine_tree(task) / task.bug.path).read_text(encoding="utf-8")
        buggy = apply_bug(original, task.bug)
        wanted = ast.dump(ast.parse(original))
        line = SuspiciousLine(file=task.bug.path, line=task.bug.line, score=1.0, function="f")
        evidence = Evidence(
            f2p_tests=tuple(task.f2p),
            p2p_tests=(),
            failures=(),
            suspicious_lines=(line,),
            suspicious_functions=(),
            coverage_used=True,
        )
        sandbox = _Files({task.bug.path: buggy})
        offline = engine()
        [hypothesis] = offline.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
        found = list(offline.candidates(hypothesis, evidence, sandbox, []))  # type: ignore[arg-type]
        rank = next((i + 1 for i, c in enumerate(found) if c.normalized[task.bug.path] == wanted), None)
        out[task.id] = (rank, len(found))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=Path(__file__).resolve().parents[1] / "bench" / "tasks")
    parser.add_argument("--without", nargs="*", default=list(ISSUE_14), help="families left out (and pairs)")
    args = parser.parse_args(argv)
    with_all = ranks(args.tasks, OfflineEngine)
    unknown = set(args.without) - {family.name for family in registry.FAMILIES}
    if unknown:
        parser.error(f"unknown template families: {', '.join(sorted(unknown))}")
    with _families_left_out(set(args.without)):
        without = ranks(args.tasks, _NoPairs)
    later = earlier = 0
    for task_id, (rank, count) in with_all.items():
        before, before_count = without[task_id]
        if rank != before:
            later += before is not None and (rank is None or rank > before)
            earlier += rank is not None and (before is None or rank < before)
            print(f"{task_id}: rank {before} of {before_count} without, {rank} of {count} with")
    found = sum(1 for rank, _ in with_all.values() if rank)
    found_before = sum(1 for rank, _ in without.values() if rank)
    total = sum(rank for rank, _ in with_all.values() if rank)
    total_before = sum(rank for rank, _ in without.values() if rank)
    print(f"tasks: {len(with_all)}; the fix among the bug line's candidates: {found_before} without, {found} with")
    print(f"rank of the fix: later for {later}, earlier for {earlier}; summed rank {total_before} -> {total}")
    count_before = sum(count for _, count in without.values())
    count = sum(count for _, count in with_all.values())
    print(f"candidates at the bug lines: {count_before} without, {count} with (ratio {count / count_before:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
