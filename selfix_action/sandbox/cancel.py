"""Cancelling the sandbox runs of one piece of work from another thread.

A front end that runs a heal (or one test run) off its event loop, in a worker thread, makes a ``Cancellation``
and runs the work inside ``cancellation.active()``. Every process the sandbox starts in that thread (a cold test
run, a warm or hot worker) is tracked; ``cancel()`` kills each one's process group and session at once, and
every later start in that work raises ``SandboxError`` (``CANCELLED``), so the work unwinds through its ordinary
error paths, which sweep what is left (``process.run_process``'s sweep, the workers' ``close``). ``finished``
is set when the work has left ``active()``: by then none of its processes is running.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

from selfix_action.errors import SandboxError

CANCELLED = "cancelled: the caller gave up on this call"


class _Killable(Protocol):
    def kill(self) -> None: ...


class Cancellation:
    """One piece of work's sandbox processes, and whether the work was cancelled."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.finished = threading.Event()
        self._lock = threading.Lock()
        self._running: set[_Killable] = set()

    @contextmanager
    def active(self) -> Iterator[Cancellation]:
        """The work inside is this cancellation's (in this thread and the context it runs in)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)
            self.finished.set()

    def check(self) -> None:
        if self.cancelled.is_set():
            raise SandboxError(CANCELLED)

    def track(self, processes: _Killable) -> None:
        """A process group just started; killed at once when the work is already cancelled."""
        with self._lock:
            self._running.add(processes)
            cancelled = self.cancelled.is_set()
        if cancelled:
            processes.kill()

    def untrack(self, processes: _Killable) -> None:
        with self._lock:
            self._running.discard(processes)

    def cancel(self) -> None:
        """Kill every tracked process group now; later starts raise ``SandboxError``."""
        with self._lock:
            self.cancelled.set()
            running = list(self._running)
        for processes in running:
            processes.kill()


_CURRENT: ContextVar[Cancellation | None] = ContextVar("selfix_cancellation", default=None)


def current() -> Cancellation | None:
    """The cancellation of the work running here, if any."""
    return _CURRENT.get()
