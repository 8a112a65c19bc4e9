"""Host side of the warm pytest worker (``plugin/selfix_forkserver.py``).

Candidate verification runs a handful of tests many times; a warm worker that forks per run cuts the
per-candidate cost from a cold interpreter + pytest start (~0.4 s) to ~0.1 s. Baseline, reproduction and the
final confirmation still use a cold ``pytest`` process, so the fast path never decides a patch on its own.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from selfix_action.errors import SelfixError
from selfix_action.sandbox import cancel
from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.process import Limits, ProcessResult, RunProcesses, _make_preexec, _rlimit_plan

log = logging.getLogger(__name__)

_START_SECONDS = 30.0
_REPLY_GRACE_SECONDS = 5.0  # the worker enforces the wall limit itself; this covers the worker dying


class ForkServerUnavailable(Exception):
    """The warm worker could not start or died; callers fall back to a cold run."""


class ForkServer:
    def __init__(
        self,
        interpreter: str,
        cwd: Path,
        env: Mapping[str, str],
        limits: Limits,
        *,
        isolation: Isolation | None = None,
        writable: Sequence[str | Path] = (),
        hidden: Sequence[str | Path] = (),
        module: str = "selfix_forkserver",
        module_args: Sequence[str] = (),
        label: str = "warm worker",
        interpreter_flags: Sequence[str] = (),  # the test command's own (-bb, -Werror, ...): the same interpreter
    ) -> None:
        argv = [interpreter, *interpreter_flags, "-m", module, *module_args]
        self._label = label
        max_processes = None
        try:
            if isolation is not None:  # the same boundary as every cold run (see process.run_process)
                argv = isolation.wrap(argv, cwd=cwd, env=env, writable=writable, hidden=hidden)
                isolation.prepare(writable)
                max_processes = isolation.process_limit(limits.max_processes)
        except SelfixError as exc:
            raise ForkServerUnavailable(str(exc)) from exc
        cancellation = cancel.current()
        if cancellation is not None and cancellation.cancelled.is_set():
            raise ForkServerUnavailable(cancel.CANCELLED)
        try:
            self._proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_make_preexec(_rlimit_plan(limits, max_processes)),
                close_fds=True,
            )
        except OSError as exc:
            raise ForkServerUnavailable(f"cannot start the {label}: {exc}") from exc
        self._buffer = b""
        # The worker's session (and pid namespace, at bwrap): what it runs when ready is kept between checks,
        # anything else found there after a check is what the check left behind.
        self._processes = RunProcesses(self._proc.pid)
        self._cancellation = cancellation
        if cancellation is not None:
            cancellation.track(self._processes)
        reply = self._read_reply(_START_SECONDS)
        if not isinstance(reply, dict) or not reply.get("ready"):
            self.close()
            raise ForkServerUnavailable(f"the {label} did not start")
        self._processes.find_namespace()
        self._processes.spare = frozenset(self._processes.members())

    def _read_reply(self, timeout: float) -> dict | list | None:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return None
        # The code under test runs in a child of the worker and can write to the reply pipe: anything that is not
        # the expected shape is a broken worker, never a crash here.
        return reply if isinstance(reply, dict | list) else None

    def run(self, args: Sequence[str], env: Mapping[str, str], log: Path, timeout: float) -> tuple[int | None, bool]:
        """Run ``pytest.main(args)`` in a forked child; (exit code or None, timed out)."""
        request = {"args": list(args), "env": dict(env), "log": str(log), "timeout": timeout}
        reply = self._send(request, timeout)
        self._sweep()
        return self._checked(reply)

    def exchange_many(self, requests: list[dict], timeout: float) -> list[tuple[int | None, bool]]:
        """Send several requests as one line (served by concurrent children); one reply per request."""
        reply = self._send(requests, timeout)
        self._sweep()
        if not isinstance(reply, list) or len(reply) != len(requests):
            self.close()
            raise ForkServerUnavailable(f"the {self._label} sent a malformed reply")
        return [self._checked(one) for one in reply]

    def _send(self, payload: dict | list[dict], timeout: float) -> object:
        if self._proc.poll() is not None:
            raise ForkServerUnavailable(f"the {self._label} has exited")
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write((json.dumps(payload) + "\n").encode())
            self._proc.stdin.flush()
        except OSError as exc:
            self.close()
            raise ForkServerUnavailable(f"the {self._label} stopped reading: {exc}") from exc
        reply = self._read_reply(timeout + _REPLY_GRACE_SECONDS)
        if reply is None:
            self.close()
            raise ForkServerUnavailable(f"the {self._label} did not answer, or answered with a malformed reply")
        return reply

    def _checked(self, reply: object) -> tuple[int | None, bool]:
        rc = reply.get("rc") if isinstance(reply, dict) else None
        timed_out = reply.get("timed_out") if isinstance(reply, dict) else None
        if (
            not isinstance(reply, dict)
            or set(reply) != {"rc", "timed_out"}
            or not ((rc is None or (isinstance(rc, int) and not isinstance(rc, bool))) and isinstance(timed_out, bool))
        ):
            self.close()
            raise ForkServerUnavailable(f"the {self._label} sent a malformed reply")
        return rc, timed_out

    def _sweep(self) -> None:
        """Kill what the checks left in the worker's session or namespace (a child that left its process group,
        a sleeper it forked): the worker and what it ran when ready stay; a check's leftovers never outlive it."""
        if self._processes.sweep() and self._proc.poll() is None:
            log.warning("the %s kept processes of a check that would not die", self._label)

    def close(self) -> None:
        # The group, then the whole session: at the landlock level a check child that moved to a process group of
        # its own is still in it (setsid() is refused); at bwrap the pid namespace goes with the worker. Safe after
        # the worker exited too: Linux never hands out a pid still in use as a group or session id.
        self._processes.kill()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._processes.spare = frozenset()
        self._processes.sweep()
        if self._cancellation is not None:
            self._cancellation.untrack(self._processes)
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()


def worker_result(
    label: str,
    args: list[str],
    code: int | None,
    timed_out: bool,
    log: Path,
    started: float,
    wall_limit: float | None = None,
) -> ProcessResult:
    """A forked worker child's run, shaped like a cold ``run_process`` result (output: the tail of its log)."""
    output = log.read_text(encoding="utf-8", errors="replace")[-20000:] if log.exists() else ""
    return ProcessResult(
        argv=(label, *args),
        returncode=code,
        stdout=output,
        stderr="",
        timed_out=timed_out,
        duration=time.monotonic() - started,
        stdout_truncated=False,
        stderr_truncated=False,
        wall_limit=wall_limit,
    )
