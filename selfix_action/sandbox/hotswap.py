"""Hot candidate checks: a worker that imported the project and collected its tests once (``plugin/selfix_hotswap``).

``HotPytestSandbox`` is a ``PytestSandbox`` whose warm runs go to that worker when the patch is a change inside
function bodies only (same module skeleton: nothing at module or class level, no signature or default changed).
The forked child swaps the new code objects into the live functions and runs the selected, already-collected
test items, so a candidate costs a fork plus the tests themselves. Anything else (module-level edits, QA test
files, coverage runs, a worker that cannot start or swap) takes the ordinary warm/cold path. The final winner is
still confirmed by one cold full-suite run, and ``bench/speed.py`` compares every verdict with a clean run.
"""

from __future__ import annotations

import ast
import json
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from selfix_action.sandbox.forkserver import ForkServer, ForkServerUnavailable
from selfix_action.sandbox.process import ProcessResult
from selfix_action.sandbox.pytest_sandbox import PytestSandbox, worker_result

_START_SECONDS = 120.0
UNSWAPPABLE = 75
UNKNOWN_TEST = 76


def skeleton(source: str) -> str | None:
    """The module with every function body emptied; two sources with equal skeletons differ only in bodies."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.body = [ast.Pass()]
    return ast.dump(tree)


class HotServer(ForkServer):
    def __init__(self, interpreter: str, cwd: Path, env: Mapping[str, str], args: list[str], limits) -> None:  # type: ignore[no-untyped-def]
        # The warm worker's start-up, running the hot module instead (bench only: no isolation wrapper yet).
        super().__init__(interpreter, cwd, env, limits, module="selfix_hotswap", module_args=args, label="hot worker")

    def check(self, request: dict, timeout: float) -> tuple[int | None, bool]:
        if self._proc.poll() is not None:
            raise ForkServerUnavailable("the hot worker has exited")
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write((json.dumps(request) + "\n").encode())
            self._proc.stdin.flush()
        except OSError as exc:
            self.close()
            raise ForkServerUnavailable(f"the hot worker stopped reading: {exc}") from exc
        reply = self._read_reply(timeout + 5.0)
        if reply is None:
            self.close()
            raise ForkServerUnavailable("the hot worker did not answer")
        return reply["rc"], bool(reply["timed_out"])


class HotPytestSandbox(PytestSandbox):
    """A PytestSandbox whose warm runs of body-only patches go to the hot worker (isolation: none only)."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._hot: HotServer | None = None
        self._hot_disabled = "" if self.isolation is None else "hot checks need isolation none"
        self._current: dict[str, str] = {}
        self._skeletons: dict[str, str | None] = {}
        self._originals: dict[str, str] = {}  # every file ever patched: the worker may hold any version of it
        self.hot_runs = 0

    def close(self) -> None:
        if self._hot is not None:
            self._hot.close()
            self._hot = None
        super().close()

    @contextmanager
    def patched(self, files: Mapping[str, str]) -> Iterator[None]:
        for rel in files:
            if rel not in self._skeletons:
                path = self._path(rel)
                text = path.read_text(encoding="utf-8") if path.exists() else None
                self._skeletons[rel] = skeleton(text) if text is not None else None
                if text is not None:
                    self._originals[rel] = text
        before = dict(self._current)
        self._current.update(files)
        try:
            with super().patched(files):
                yield
        finally:
            self._current = before

    def _hot_server(self) -> HotServer | None:
        if self._hot is None and not self._hot_disabled:
            if len(self.test_cmd) < 3 or self.test_cmd[1:3] != ["-m", "pytest"]:
                self._hot_disabled = "the test command is not `<python> -m pytest ...`"
                return None
            env = self._env(self._tmp / "hot-unused.jsonl", False)
            args = [*self.test_cmd[3:], "-p", "selfix_collector", "-p", "no:cacheprovider", "-q", "--tb=no",
                    "--color=no"]
            try:
                self._hot = HotServer(self.test_cmd[0], self.root, env, args, self.limits)
            except ForkServerUnavailable as exc:
                self._hot_disabled = str(exc)
        return self._hot

    def _run_warm(self, args: list[str], results_file: Path, coverage: bool) -> ProcessResult | None:
        request = self._hot_request(args, results_file, coverage)
        server = self._hot_server() if request is not None else None
        if server is None or request is None:
            return super()._run_warm(args, results_file, coverage)
        log = self._tmp / "hot.log"
        request["log"] = str(log)
        wall = self._call_wall or self.limits.wall_seconds
        request["timeout"] = wall
        if self._call_wall is not None:
            # The CPU limit cut to match: a runaway dies at the wall limit or its CPU time, whichever comes first.
            cpu = self.limits.cpu_seconds
            request["cpu_seconds"] = max(1, math.ceil(wall)) if cpu is None else min(cpu, max(1, math.ceil(wall)))
        started = time.monotonic()
        try:
            code, timed_out = server.check(request, wall)
        except ForkServerUnavailable as exc:
            self._hot, self._hot_disabled = None, str(exc)
            return super()._run_warm(args, results_file, coverage)
        if code in (UNSWAPPABLE, UNKNOWN_TEST):
            results_file.unlink(missing_ok=True)
            return super()._run_warm(args, results_file, coverage)
        self.hot_runs += 1
        limit = wall if self._call_wall is not None else None
        return worker_result("<hot worker>", args, code, timed_out, log, started, limit)

    def _hot_request(self, args: list[str], results_file: Path, coverage: bool) -> dict | None:
        if coverage or "--" not in args or any(a == "--deselect" for a in args):
            return None
        nodeids = args[args.index("--") + 1 :]
        if not nodeids or any("::" not in n for n in nodeids):
            return None  # whole files or directories (QA test files): not among the collected items
        wanted = {rel: self._current.get(rel, original) for rel, original in self._originals.items()}
        if set(self._current) - set(wanted):
            return None  # a new file
        for rel, text in wanted.items():
            base = self._skeletons.get(rel)
            if base is None or (text is not self._originals[rel] and skeleton(text) != base):
                return None  # a module-level, signature or new-file change: needs a fresh import
        files = {str(self._path(rel)): text for rel, text in wanted.items()}
        return {
            "files": files,
            "nodeids": nodeids,
            "stop_first": "-x" in args,
            "results": str(results_file),
            "timeout": self.limits.wall_seconds,
        }
