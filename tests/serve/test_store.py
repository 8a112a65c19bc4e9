"""The store's writer: a request's future resolves only once its transaction is on disk, one failing operation is
undone alone, the queue is bounded (QueueFull, never a silent drop), and a replayed identity writes nothing."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from selfix_action.serve.signals import Signal
from selfix_action.serve.store import Accepted, QueueFull, Replayed, Store, accept, record

REPO = "octo-org/octo-repo"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "serve.sqlite3", queue_size=100)
    yield opened
    opened.close()


def _signal(n: int, fingerprint: str = "error:o/r:abc") -> Signal:
    return Signal("error", "error", fingerprint, REPO, {"error": f"e{n}"})


def _committed(path: Path, identity: str) -> bool:
    """What another process would see: a fresh connection reads only committed rows."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM signals WHERE delivery = ?", (identity,)).fetchone()[0] == 1
    finally:
        conn.close()


def test_a_future_resolves_only_after_its_row_is_committed(store: Store) -> None:
    seen: list[bool] = []
    futures = []
    for n in range(2):
        future = store.submit(accept(f"d{n}", "error", "digest", _signal(n)))
        future.add_done_callback(lambda f, n=n: seen.append(_committed(store.path, f"d{n}")))
        futures.append(future)
    results = [f.result(timeout=10) for f in futures]
    deadline = time.monotonic() + 10  # the callbacks run in the writer, just after the results are set
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == [True, True]
    assert [(r.count, r.new) for r in results if isinstance(r, Accepted)] == [(1, True), (2, False)]


def test_a_replayed_identity_writes_nothing(store: Store) -> None:
    assert isinstance(store.write(accept("d1", "error", "x", _signal(1))), Accepted)
    assert store.write(accept("d1", "error", "y", _signal(2, "error:o/r:other"))) == Replayed("d1")
    assert store.write(record("d1", "error", "ignored")) == Replayed("d1")
    assert store.read("SELECT COUNT(*) FROM signals") == [(1,)]
    assert store.fingerprint("error:o/r:other") is None


def test_one_failing_operation_is_undone_alone(store: Store) -> None:
    def half_then_fail(conn: sqlite3.Connection) -> None:
        accept("bad", "error", "x", _signal(9, "error:o/r:bad"))(conn)
        raise ValueError("fails after writing")

    gate = threading.Event()
    blocker = store.submit(lambda conn: gate.wait(10))  # holds the writer so the next two share one transaction
    failing = store.submit(half_then_fail)
    good = store.submit(accept("good", "error", "x", _signal(1)))
    gate.set()
    blocker.result(timeout=10)
    with pytest.raises(ValueError):
        failing.result(timeout=10)
    assert isinstance(good.result(timeout=10), Accepted)
    assert store.read("SELECT delivery FROM signals") == [("good",)]
    assert store.fingerprint("error:o/r:bad") is None


def test_a_full_queue_refuses_instead_of_dropping(tmp_path: Path) -> None:
    store = Store(tmp_path / "small.sqlite3", queue_size=2)
    gate = threading.Event()
    started = threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        started.set()
        gate.wait(10)

    held = store.submit(hold)
    assert started.wait(10)
    queued: list[Future[object]] = [store.submit(accept(f"q{n}", "error", "x", _signal(n))) for n in range(2)]
    with pytest.raises(QueueFull):
        store.submit(accept("overflow", "error", "x", _signal(3)))
    gate.set()
    held.result(timeout=10)
    assert all(isinstance(f.result(timeout=10), Accepted) for f in queued)
    assert store.read("SELECT COUNT(*) FROM signals") == [(2,)]
    store.close()


def test_health_follows_the_writer(tmp_path: Path) -> None:
    opened = Store(tmp_path / "serve.sqlite3")
    assert opened.healthy()
    opened.close()
    assert not opened.healthy()
