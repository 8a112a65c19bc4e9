"""Heals leave the server: a background thread reads the ``pending`` fingerprints from the store (so a heal
acknowledged just before a crash is dispatched after the restart) and hands each to a ``Dispatcher``:

- ``ActionsDispatcher``: ``workflow_dispatch`` of the repository's selfix workflow, one runner per heal, the
  action does the rest;
- ``LocalPool``: for a project without Actions, ``selfix fix --from-error`` in a bounded pool of worker processes.

The server process never runs project code: a heal runs on a runner, or in a pool process that starts clean.
"""

from __future__ import annotations

import importlib
import multiprocessing
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from selfix_action.errors import SelfixError
from selfix_action.github.client import WRITE_PERMISSIONS, GitHubClient
from selfix_action.github.errors import GitHubError, GitHubRateLimited
from selfix_action.serve.config import LocalConfig, RepositoryConfig, ServeConfig
from selfix_action.serve.observe import Metrics, log
from selfix_action.serve.signals import MAX_DISPATCH_INPUT_CHARS
from selfix_action.serve.store import Pending, Store, set_state

DISPATCH_FIXES: dict[int | None, Callable[[str], str]] = {
    404: lambda said: f"workflow not found (file name? on the default branch?): {said}",
    422: lambda said: (
        f"the workflow rejected the inputs: {said} (does it declare them under on.workflow_dispatch.inputs?)"
    ),
}
RATE_LIMIT_FALLBACK_SECONDS = 60.0  # when a rate limit names no reset
RETRY_BACKOFF_SECONDS = 30.0  # a transport failure or 5xx: tried again this much later, doubling


@dataclass(frozen=True)
class Dispatched:
    url: str  # the run's URL ("" when GitHub does not say), or a description of the local job
    finished: bool = True  # False: started in the local pool, which records its state itself


class Dispatcher(Protocol):
    def dispatch(self, heal: Pending) -> Dispatched:
        """Start the heal; raise ``GitHubRateLimited`` to wait, ``GitHubError`` or ``SelfixError`` on failure."""
        ...


class ActionsDispatcher:
    """``workflow_dispatch`` of each repository's selfix workflow with the signal as its inputs."""

    def __init__(
        self,
        repositories: tuple[RepositoryConfig, ...],
        token: str,
        api_url: str,
        client_factory: Callable[[str, str, str], GitHubClient] | None = None,
    ) -> None:
        self._repos = {r.repo: r for r in repositories}
        self._token = token
        self._api_url = api_url
        self._factory = client_factory or (lambda token, repo, url: GitHubClient(token, repo, url, retries=2))
        self._clients: dict[str, GitHubClient] = {}

    def _client(self, repo: str) -> GitHubClient:
        if repo not in self._clients:
            self._clients[repo] = self._factory(self._token, repo, self._api_url)
        return self._clients[repo]

    def inputs(self, heal: Pending) -> tuple[str, dict[str, str]]:
        """The ref the workflow runs on and its inputs (``ref``, ``description``; ``error`` and ``signal`` for a
        production error), each within GitHub's 65,535-character limit."""
        repo = self._repos[heal.repo]
        data = heal.heal
        if heal.kind == "workflow_run":
            ref = str(data["ref"])
            return ref, {"ref": ref, "description": str(data["description"])}
        if heal.kind == "comment":
            client = self._client(heal.repo)
            commenter = str(data["commenter"])
            # Anyone can comment; the dispatch runs with the server's token, so only a writer may ask for it.
            if client.permission(commenter) not in WRITE_PERMISSIONS:
                raise SelfixError(f"{commenter} may not ask for a heal (needs write access to {heal.repo})")
            pull = client.get_pull(int(data["pull"]))
            if pull.head_repo != heal.repo:
                raise SelfixError(f"pull request #{pull.number} comes from a fork ({pull.head_repo}): not dispatched")
            return pull.head_ref, {"ref": pull.head_ref, "description": str(data["description"])}
        return repo.ref, {
            "ref": repo.ref,
            "description": f"selfix serve: production error {data.get('headline', '')}"[:1000],
            "error": str(data["error"])[:MAX_DISPATCH_INPUT_CHARS],
            "signal": heal.fingerprint,
        }

    def dispatch(self, heal: Pending) -> Dispatched:
        ref, inputs = self.inputs(heal)
        workflow = self._repos[heal.repo].workflow
        try:
            url = self._client(heal.repo).dispatch_workflow(workflow, ref, inputs)
        except GitHubRateLimited:
            raise
        except GitHubError as exc:
            # What to fix, for the two refusals a workflow's set-up causes (the action's publisher does the same).
            if exc.status not in DISPATCH_FIXES:
                raise
            what = f"dispatch {workflow} on {ref}: "
            raise GitHubError(what + DISPATCH_FIXES[exc.status](exc.server_message), exc.status) from exc
        return Dispatched(url)


@dataclass(frozen=True)
class LocalJob:
    path: Path
    test_command: str
    engine: str
    error: str  # the error's text (a traceback, or a Sentry event's JSON)
    fingerprint: str


def _spawn_context() -> multiprocessing.context.BaseContext:
    # spawn, not fork: the server has threads (the writer, the dispatcher, the event loop) whose locks a forked
    # child would inherit held; a spawned worker starts a fresh interpreter that imports only the job.
    return multiprocessing.get_context("spawn")


class LocalPool:
    """At most ``workers`` heals at once, each ``job(LocalJob)`` in a worker process; the job's exit code 0 or 3
    (healed, or nothing to heal) is ``done``, anything else ``failed``."""

    def __init__(self, local: LocalConfig, job: Callable[[LocalJob], int], store: Store, metrics: Metrics) -> None:
        self._local = local
        self._job = job
        self._store = store
        self._metrics = metrics
        self._executor = ProcessPoolExecutor(max_workers=local.workers, mp_context=_spawn_context())
        self._running: set[str] = set()
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        with self._lock:
            return len(self._running) >= self._local.workers

    def dispatch(self, heal: Pending) -> Dispatched:
        job = LocalJob(
            self._local.path, self._local.test_command, self._local.engine, str(heal.heal["error"]), heal.fingerprint
        )
        with self._lock:
            self._running.add(heal.fingerprint)
        # Marked before it starts: a quick job's end (done, failed) must not be overwritten by its start.
        self._store.write(set_state(heal.fingerprint, "dispatched", run_url=f"local pool: {self._local.path}"))
        future = self._executor.submit(self._job, job)
        future.add_done_callback(lambda done: self._finished(heal.fingerprint, done))
        return Dispatched(f"local pool: {self._local.path}", finished=False)

    def _finished(self, fingerprint: str, future: Future[int]) -> None:
        with self._lock:
            self._running.discard(fingerprint)
        try:
            code = future.result()
            error = "" if code in (0, 3) else f"selfix fix exited {code}"
        except Exception as exc:  # the worker died or the job raised: reported, never fatal to the server
            code, error = -1, f"the local heal crashed: {type(exc).__name__}: {exc}"
        state = "done" if not error else "failed"
        try:
            self._store.write(set_state(fingerprint, state, error=error, attempt=False))
        except Exception:
            log().exception("could not record a local heal's end", extra={"event": "store_error"})
            return
        if error:
            self._metrics.count("selfix_serve_dispatch_failures_total", reason="local")
        log().info(
            "local heal finished",
            extra={"event": "heal_finished", "fingerprint": fingerprint, "status": state, "error": error},
        )

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def run_local_heal(job: LocalJob) -> int:
    """The pool's job, in the worker process: ``selfix fix <path> --from-error <file>`` through the CLI's own
    entry point (its checks and defaults). The CLI sits above this package, so it is looked up by name here, in
    the child, as ``selfix bench`` looks up the benchmark."""
    cli = importlib.import_module("selfix_action.cli")
    with tempfile.TemporaryDirectory(prefix="selfix-serve-") as folder:
        error_file = Path(folder) / f"{job.fingerprint.replace(':', '_')[:80]}.txt"
        error_file.write_text(job.error, encoding="utf-8")
        argv = [
            "fix", str(job.path), "--from-error", str(error_file), "--engine", job.engine,
            "--test-cmd", job.test_command, "--quiet",
        ]  # fmt: skip
        return int(cli.main(argv))


class DispatchLoop:
    """The background thread: every ``interval`` seconds, the pending heals to their dispatcher."""

    def __init__(
        self,
        config: ServeConfig,
        store: Store,
        metrics: Metrics,
        actions: Dispatcher | None,
        pool: LocalPool | None,
    ) -> None:
        self._config = config
        self._store = store
        self._metrics = metrics
        self._actions = actions
        self._pool = pool
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="selfix-serve-dispatch", daemon=True)

    def start(self) -> None:
        if self._pool is not None and self._config.local is not None:
            # A local heal in flight died with the previous server process: it is run again.
            self._store.write(_requeue_local(self._config.local.repo))
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # a bug here must not stop future dispatches: logged, tried again
                log().exception("dispatch round failed", extra={"event": "dispatch_error"})
            self._stop.wait(self._config.dispatch_interval_seconds)

    def _dispatcher(self, repo: str) -> Dispatcher | LocalPool | None:
        if self._config.repository(repo) is not None:
            return self._actions
        if self._config.local is not None and self._config.local.repo == repo:
            return self._pool
        return None

    def run_once(self) -> int:
        """Dispatch what is pending now; the number handed over."""
        handed = 0
        now = time.time()
        budget: dict[str, int] = {}
        for heal in self._store.pending(now, limit=200):
            if self._stop.is_set():
                break
            dispatcher = self._dispatcher(heal.repo)
            if isinstance(dispatcher, LocalPool) and dispatcher.full:
                continue  # stays pending, in the database rather than in the pool's memory
            if not isinstance(dispatcher, LocalPool) and dispatcher is not None:
                if heal.repo not in budget:
                    used = self._store.dispatched_since(heal.repo, now - 3600)
                    budget[heal.repo] = self._config.max_dispatches_per_hour - used
                if budget[heal.repo] <= 0:
                    continue  # this repository's hourly budget is spent: it waits, oldest first
                budget[heal.repo] -= 1
            handed += self._dispatch_one(heal, dispatcher)
        return handed

    def _dispatch_one(self, heal: Pending, dispatcher: Dispatcher | LocalPool | None) -> int:
        fields = {"fingerprint": heal.fingerprint, "repo": heal.repo}
        if dispatcher is None:
            self._fail(heal, "no dispatcher for this repository (removed from the config?)", "unconfigured")
            return 0
        try:
            outcome = dispatcher.dispatch(heal)
        except GitHubRateLimited as exc:
            reset = exc.reset_at if exc.reset_at is not None else time.time() + RATE_LIMIT_FALLBACK_SECONDS
            self._store.write(set_state(heal.fingerprint, "pending", error=str(exc), not_before=reset))
            self._metrics.count("selfix_serve_dispatch_failures_total", reason="rate_limited")
            log().warning(
                "dispatch rate limited: waiting for the reset",
                extra={"event": "dispatch_deferred", "error": str(exc), "status": "pending", **fields},
            )
            return 0
        except GitHubError as exc:
            transient = exc.status is None or exc.status >= 500
            if transient and heal.attempts + 1 < self._config.max_dispatch_attempts:
                later = time.time() + RETRY_BACKOFF_SECONDS * 2**heal.attempts
                self._store.write(set_state(heal.fingerprint, "pending", error=str(exc), not_before=later))
                self._metrics.count("selfix_serve_dispatch_failures_total", reason="transient")
                log().warning(
                    "dispatch failed, will retry",
                    extra={"event": "dispatch_retry", "error": str(exc), "status": "pending", **fields},
                )
                return 0
            self._fail(heal, str(exc), f"http_{exc.status}" if exc.status else "unreachable")
            return 0
        except SelfixError as exc:
            self._fail(heal, str(exc), "refused")
            return 0
        state = "dispatched"
        if outcome.finished:  # a local job recorded its own start (and may have ended already)
            self._store.write(set_state(heal.fingerprint, state, run_url=outcome.url))
        self._metrics.count("selfix_serve_dispatched_total")
        log().info("heal dispatched", extra={"event": "dispatched", "status": state, "url": outcome.url, **fields})
        return 1

    def _fail(self, heal: Pending, message: str, reason: str) -> None:
        self._store.write(set_state(heal.fingerprint, "failed", error=message))
        self._metrics.count("selfix_serve_dispatch_failures_total", reason=reason)
        log().error(
            "dispatch failed",
            extra={
                "event": "dispatch_failed",
                "fingerprint": heal.fingerprint,
                "repo": heal.repo,
                "status": "failed",
                "reason": reason,
                "error": message,
            },
        )


def _requeue_local(repo: str) -> Callable[[sqlite3.Connection], None]:
    def operation(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE fingerprints SET state = 'pending' WHERE state = 'dispatched' AND repo = ?", (repo,))

    return operation
