"""The server's SQLite database: what was received (``deliveries``, for replays), what was accepted (``signals``,
one row per accepted delivery) and what to heal (``fingerprints``, one row per distinct signal, with its count and
its dispatch state).

Durability: WAL with ``synchronous=FULL``, so a transaction is on disk when COMMIT returns; the server
acknowledges a signal only after the transaction holding it committed, so nothing acknowledged is lost to a crash.
Throughput: one writer thread commits in groups: it takes everything queued, runs it in one transaction, commits
once (one fsync for many requests) and then resolves each request's future. The queue is bounded: when it is full
``submit`` raises ``QueueFull`` and the request is answered 503, never dropped silently.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from selfix_action.serve.signals import Signal

T = TypeVar("T")
QueueFull = queue.Full
MAX_BATCH = 1000  # operations per transaction: bounds the time one group holds the others' answers

SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    identity TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    received_at REAL NOT NULL,
    outcome TEXT NOT NULL  -- stored | ignored: <reason>
);
CREATE TABLE IF NOT EXISTS signals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery TEXT NOT NULL UNIQUE REFERENCES deliveries(identity),
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    repo TEXT NOT NULL,
    received_at REAL NOT NULL,
    digest TEXT NOT NULL,  -- SHA-256 of the body as received
    heal TEXT NOT NULL  -- JSON: the input the heal needs
);
CREATE INDEX IF NOT EXISTS signals_fingerprint ON signals(fingerprint);
CREATE TABLE IF NOT EXISTS fingerprints (
    fingerprint TEXT PRIMARY KEY,
    repo TEXT NOT NULL,
    kind TEXT NOT NULL,
    count INTEGER NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    signal_id INTEGER NOT NULL REFERENCES signals(id),  -- the first occurrence: what is dispatched
    state TEXT NOT NULL CHECK (state IN ('pending', 'dispatched', 'failed', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,  -- a rate-limited dispatch waits for the reset
    last_error TEXT NOT NULL DEFAULT '',
    run_url TEXT NOT NULL DEFAULT '',
    dispatched_at REAL NOT NULL DEFAULT 0  -- when it last left for Actions or the pool (the hourly budget)
);
CREATE INDEX IF NOT EXISTS fingerprints_pending ON fingerprints(state, not_before);
"""


@dataclass(frozen=True)
class Accepted:
    signal_id: int
    fingerprint: str
    count: int
    new: bool  # the first occurrence of its fingerprint


@dataclass(frozen=True)
class Recorded:
    """A valid delivery that asked for nothing: kept for replay detection only."""

    reason: str


@dataclass(frozen=True)
class Replayed:
    identity: str


@dataclass(frozen=True)
class Pending:
    fingerprint: str
    repo: str
    kind: str
    attempts: int
    heal: dict[str, Any]


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


class Store:
    def __init__(self, path: Path, queue_size: int = 10_000) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._writer_conn = _connect(path)
        self._writer_conn.executescript(SCHEMA)
        self._read_conn = _connect(path)
        self._read_lock = threading.Lock()
        self._queue: queue.Queue[tuple[Callable[[sqlite3.Connection], Any], Future[Any]] | None] = queue.Queue(
            maxsize=queue_size
        )
        self._thread = threading.Thread(target=self._write_loop, name="selfix-serve-writer", daemon=True)
        self._thread.start()

    # -- the writer -----------------------------------------------------------------------------------------
    def submit(self, operation: Callable[[sqlite3.Connection], T]) -> Future[T]:
        """Queue ``operation`` for the writer; its future resolves once its transaction committed. Raises
        ``QueueFull`` when the queue is full."""
        future: Future[T] = Future()
        self._queue.put_nowait((operation, future))
        return future

    def write(self, operation: Callable[[sqlite3.Connection], T], timeout: float = 60.0) -> T:
        """``submit`` and wait (for threads other than the event loop: the dispatcher). Waits for room in the
        queue rather than failing: the dispatcher is not a client that can be told to come back later."""
        future: Future[T] = Future()
        self._queue.put((operation, future), timeout=timeout)
        return future.result(timeout=timeout)

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    @property
    def writing(self) -> bool:
        return self._thread.is_alive()

    def _write_loop(self) -> None:
        conn = self._writer_conn
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            self._run_batch(conn, batch)
            if stop:
                return

    @staticmethod
    def _run_batch(
        conn: sqlite3.Connection, batch: list[tuple[Callable[[sqlite3.Connection], Any], Future[Any]]]
    ) -> None:
        outcomes: list[tuple[Future[Any], bool, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for operation, future in batch:
                # A savepoint per operation: one that fails is undone alone, the group still commits.
                conn.execute("SAVEPOINT op")
                try:
                    outcomes.append((future, True, operation(conn)))
                    conn.execute("RELEASE op")
                except Exception as exc:  # reported to its caller through the future
                    conn.execute("ROLLBACK TO op")
                    conn.execute("RELEASE op")
                    outcomes.append((future, False, exc))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for _, future in batch:
                future.set_exception(exc)
            return
        # Only now, with the transaction on disk, are the requests answered.
        for future, ok, value in outcomes:
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)
        self._writer_conn.close()
        self._read_conn.close()

    # -- reads ----------------------------------------------------------------------------------------------
    def read(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return self._read_conn.execute(query, params).fetchall()

    def healthy(self) -> bool:
        try:
            return self.writing and self.read("SELECT 1") == [(1,)]
        except sqlite3.Error:
            return False

    def pending(self, now: float, limit: int = 20) -> list[Pending]:
        rows = self.read(
            "SELECT f.fingerprint, f.repo, f.kind, f.attempts, s.heal FROM fingerprints f "
            "JOIN signals s ON s.id = f.signal_id WHERE f.state = 'pending' AND f.not_before <= ? "
            "ORDER BY f.first_seen LIMIT ?",
            (now, limit),
        )
        return [Pending(fp, repo, kind, attempts, json.loads(heal)) for fp, repo, kind, attempts, heal in rows]

    def fingerprint(self, fingerprint: str) -> dict[str, Any] | None:
        rows = self.read(
            "SELECT fingerprint, repo, kind, count, first_seen, last_seen, state, attempts, not_before, last_error, "
            "run_url FROM fingerprints WHERE fingerprint = ?",
            (fingerprint,),
        )
        if not rows:
            return None
        keys = (
            "fingerprint", "repo", "kind", "count", "first_seen", "last_seen", "state", "attempts", "not_before",
            "last_error", "run_url",
        )  # fmt: skip
        return dict(zip(keys, rows[0], strict=True))

    def dispatched_since(self, repo: str, since: float) -> int:
        """Heals of ``repo`` dispatched at or after ``since`` (whatever their state now)."""
        return int(
            self.read("SELECT COUNT(*) FROM fingerprints WHERE repo = ? AND dispatched_at >= ?", (repo, since))[0][0]
        )

    def states(self) -> dict[str, int]:
        return dict(self.read("SELECT state, COUNT(*) FROM fingerprints GROUP BY state"))


# -- the writer's operations (run inside its transaction) ---------------------------------------------------------
def accept(identity: str, source: str, digest: str, signal: Signal) -> Callable[[sqlite3.Connection], Any]:
    """Record the delivery and its signal, and count its fingerprint: ``Accepted``, or ``Replayed`` when the
    delivery's identity was seen before (nothing written)."""

    def operation(conn: sqlite3.Connection) -> Accepted | Replayed:
        now = time.time()
        inserted = conn.execute(
            "INSERT OR IGNORE INTO deliveries (identity, source, received_at, outcome) VALUES (?, ?, ?, 'stored')",
            (identity, source, now),
        ).rowcount
        if not inserted:
            return Replayed(identity)
        cursor = conn.execute(
            "INSERT INTO signals (delivery, source, kind, fingerprint, repo, received_at, digest, heal) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (identity, source, signal.kind, signal.fingerprint, signal.repo, now, digest, json.dumps(signal.heal)),
        )
        signal_id = cursor.lastrowid
        assert signal_id is not None
        row = conn.execute(
            "UPDATE fingerprints SET count = count + 1, last_seen = ? WHERE fingerprint = ? RETURNING count",
            (now, signal.fingerprint),
        ).fetchone()
        if row is not None:
            return Accepted(signal_id, signal.fingerprint, int(row[0]), new=False)
        conn.execute(
            "INSERT INTO fingerprints (fingerprint, repo, kind, count, first_seen, last_seen, signal_id, state) "
            "VALUES (?, ?, ?, 1, ?, ?, ?, 'pending')",
            (signal.fingerprint, signal.repo, signal.kind, now, now, signal_id),
        )
        return Accepted(signal_id, signal.fingerprint, 1, new=True)

    return operation


def record(identity: str, source: str, reason: str) -> Callable[[sqlite3.Connection], Recorded | Replayed]:
    """Record a delivery that asks for nothing (a green run): a replay of it is still refused."""

    def operation(conn: sqlite3.Connection) -> Recorded | Replayed:
        inserted = conn.execute(
            "INSERT OR IGNORE INTO deliveries (identity, source, received_at, outcome) VALUES (?, ?, ?, ?)",
            (identity, source, time.time(), f"ignored: {reason}"[:300]),
        ).rowcount
        return Recorded(reason) if inserted else Replayed(identity)

    return operation


def set_state(
    fingerprint: str, state: str, *, error: str = "", run_url: str = "", not_before: float = 0.0, attempt: bool = True
) -> Callable[[sqlite3.Connection], None]:
    def operation(conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE fingerprints SET state = ?, last_error = ?, run_url = ?, not_before = ?, "
            "attempts = attempts + ?, dispatched_at = CASE WHEN ? = 'dispatched' THEN ? ELSE dispatched_at END "
            "WHERE fingerprint = ?",
            (state, error[:2000], run_url, not_before, 1 if attempt else 0, state, time.time(), fingerprint),
        )

    return operation
