"""Host side of the hot pytest worker (``plugin/selfix_hotswap.py``): imports and collection paid once per run.

``PytestSandbox`` sends a warm candidate check here when the patch changes function bodies only (same module
skeleton: nothing at module or class level, no signature or default changed). The worker's forked child swaps the
new code objects into the live functions and runs the selected, already-collected test items, so a candidate
costs a fork plus the tests themselves. Anything else (module-level edits, QA test files, coverage runs, a worker
that cannot start or swap) takes the fork-per-run warm worker or a cold run. The final winner is still confirmed
by one cold full-suite run, and ``selfix_bench/speed.py`` compares every verdict with a clean run.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path

from selfix_action.sandbox.forkserver import ForkServer
from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.process import Limits

UNSWAPPABLE = 75  # the worker cannot swap this patch in: run it another way
UNKNOWN_TEST = 76  # a requested test is not among the collected ones


def skeleton(source: str) -> str | None:
    """The module with every function body emptied; two sources with equal skeletons differ only in bodies.

    Called on every candidate's file, so it never walks into function bodies (most of a module's nodes)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.body = [ast.Pass()]
        stack.extend(ast.iter_child_nodes(node))
    return ast.dump(tree)


class HotServer(ForkServer):
    """The warm worker's start-up (and isolation boundary), running the hot module instead; its requests are
    lists of checks (``exchange_many``), served by concurrent children."""

    def __init__(
        self,
        interpreter: str,
        cwd: Path,
        env: Mapping[str, str],
        args: list[str],
        limits: Limits,
        *,
        isolation: Isolation | None = None,
        writable: Sequence[str | Path] = (),
        hidden: Sequence[str | Path] = (),
        interpreter_flags: Sequence[str] = (),
    ) -> None:
        super().__init__(
            interpreter,
            cwd,
            env,
            limits,
            isolation=isolation,
            writable=writable,
            hidden=hidden,
            module="selfix_hotswap",
            module_args=args,
            label="hot worker",
            interpreter_flags=interpreter_flags,
        )
