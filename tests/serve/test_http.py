"""The receiver over real HTTP on 127.0.0.1, against the real server process, with real signatures: every refusal
stores nothing; junk never crashes it; the same error 500 times is one fingerprint and one dispatch; a restart keeps
everything."""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.serve.signatures import sign_generic, sign_github, sign_sentry
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.serve_server import (
    GITHUB_SECRET,
    REPO,
    SENTRY_SECRET,
    SIGNING_SECRET,
    ServeProcess,
    error_request,
    failed_run,
    free_port,
    github_request,
    rows,
    sentry_request,
    stored_counts,
    traceback_text,
    write_config,
)


def _refused_and_nothing_stored(
    server: ServeProcess, database: Path, path: str, body: bytes, headers: dict[str, str], status: int = 401
) -> dict[str, str]:
    before = stored_counts(database)
    got, answer = server.request("POST", path, body, headers)
    assert got == status, answer
    assert stored_counts(database) == before
    assert isinstance(answer, dict)
    return answer


def test_wrong_missing_and_stale_signatures_are_refused_and_stored_nowhere(
    shared_server: ServeProcess, database: Path
) -> None:
    body, headers = github_request("workflow_run", failed_run(1))
    wrong = {**headers, "X-Hub-Signature-256": sign_github(b"not-the-secret", body)}
    _refused_and_nothing_stored(shared_server, database, "/webhooks/github", body, wrong)
    missing = {k: v for k, v in headers.items() if k != "X-Hub-Signature-256"}
    _refused_and_nothing_stored(shared_server, database, "/webhooks/github", body, missing)
    tampered = body.replace(b"failure", b"failurE")
    _refused_and_nothing_stored(shared_server, database, "/webhooks/github", tampered, headers)

    body, headers = sentry_request({"data": {}}, timestamp=int(time.time()) - 301)
    _refused_and_nothing_stored(shared_server, database, "/webhooks/sentry", body, headers)
    body, headers = sentry_request({"data": {}})
    wrong = {**headers, "Sentry-Hook-Signature": sign_sentry(b"nope", body)}
    _refused_and_nothing_stored(shared_server, database, "/webhooks/sentry", body, wrong)

    body, headers = error_request(traceback_text(1), timestamp=int(time.time()) - 3600)
    assert "stale" in _refused_and_nothing_stored(shared_server, database, "/webhooks/error", body, headers)["error"]
    body, _ = error_request(traceback_text(1))
    other_key = {"Content-Type": "application/json", **sign_generic(b"nope", body, int(time.time()))}
    _refused_and_nothing_stored(shared_server, database, "/webhooks/error", body, other_key)
    # the GitHub secret does not sign for the generic source
    github_signed = {"Content-Type": "application/json", **sign_generic(GITHUB_SECRET.encode(), body, int(time.time()))}
    _refused_and_nothing_stored(shared_server, database, "/webhooks/error", body, github_signed)

    _, metrics = shared_server.request("GET", "/metrics")
    assert 'selfix_serve_refused_total{reason="signature_wrong"}' in metrics
    assert 'selfix_serve_refused_total{reason="signature_stale"}' in metrics


def test_a_replayed_delivery_is_refused_and_stored_once(shared_server: ServeProcess, database: Path) -> None:
    for path, (body, headers) in (
        ("/webhooks/github", github_request("workflow_run", failed_run(77))),
        ("/webhooks/error", error_request(traceback_text(5))),
        ("/webhooks/sentry", sentry_request(_sentry_alert(1))),
        ("/webhooks/github", github_request("workflow_run", failed_run(78, conclusion="success"))),  # ignored
    ):
        status, answer = shared_server.request("POST", path, body, headers)
        assert status == 202, answer
        _refused_and_nothing_stored(shared_server, database, path, body, headers)
    # GitHub's redelivery of the same delivery id with a new body is a replay too
    body, headers = github_request("workflow_run", failed_run(79), delivery="fixed-delivery-id")
    assert shared_server.request("POST", "/webhooks/github", body, headers)[0] == 202
    body, headers = github_request("workflow_run", failed_run(80), delivery="fixed-delivery-id")
    _refused_and_nothing_stored(shared_server, database, "/webhooks/github", body, headers)


def _sentry_alert(n: int, project: str = "backend") -> dict[str, object]:
    frame = {"abs_path": "/srv/app/shop/cart.py", "function": "parse", "lineno": 40 + n, "in_app": True}
    event = {
        "event_id": f"{n:032x}",
        "url": f"https://sentry.io/api/0/projects/acme/{project}/events/{n}/",
        "exception": {"values": [{"type": "ValueError", "value": f"bad {n}", "stacktrace": {"frames": [frame]}}]},
    }
    return {"action": "triggered", "data": {"event": event}}


def _raw_http(port: int, request: bytes) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data


def test_bodies_too_large_by_length_or_while_streaming_get_413(shared_server: ServeProcess, database: Path) -> None:
    limit = 64 * 1024
    big = json.dumps({"repo": REPO, "error": "x" * limit}).encode()
    headers = {"Content-Type": "application/json", **sign_generic(SIGNING_SECRET.encode(), big, int(time.time()))}
    _refused_and_nothing_stored(shared_server, database, "/webhooks/error", big, headers, 413)
    # chunked, no Content-Length: refused while reading, once past the limit
    head = (
        "POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nX-GitHub-Event: workflow_run\r\nX-GitHub-Delivery: chunky\r\n"
        f"X-Hub-Signature-256: {sign_github(GITHUB_SECRET.encode(), big)}\r\n\r\n"
    ).encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(big[i : i + 8192]), big[i : i + 8192]) for i in range(0, len(big), 8192))
    before = stored_counts(database)
    status, _ = _raw_http(shared_server.port, head + chunks + b"0\r\n\r\n")
    assert status == 413
    assert stored_counts(database) == before
    assert shared_server.request("GET", "/healthz")[0] == 200


def test_malformed_misshapen_and_mistyped_bodies_get_4xx(shared_server: ServeProcess, database: Path) -> None:
    for raw in (b"{not json", b"[1, 2, 3]", b'{"repo": "octo-org/octo-repo"}', b'{"repo": 1, "error": "x"}'):
        headers = {"Content-Type": "application/json", **sign_generic(SIGNING_SECRET.encode(), raw, int(time.time()))}
        _refused_and_nothing_stored(shared_server, database, "/webhooks/error", raw, headers, 400)
    unknown_repo = json.dumps({"repo": "someone/else", "error": traceback_text(1)}).encode()
    headers = {
        "Content-Type": "application/json",
        **sign_generic(SIGNING_SECRET.encode(), unknown_repo, int(time.time())),
    }
    _refused_and_nothing_stored(shared_server, database, "/webhooks/error", unknown_repo, headers, 422)
    body, headers = github_request("workflow_run", {"action": "completed", "repository": {"full_name": REPO}})
    _refused_and_nothing_stored(shared_server, database, "/webhooks/github", body, headers, 400)
    body, headers = error_request(traceback_text(1))
    form = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    _refused_and_nothing_stored(shared_server, database, "/webhooks/error", body, form, 415)


def test_junk_never_crashes_the_server(shared_server: ServeProcess, database: Path) -> None:
    rng = random.Random(35)
    statuses: set[int] = set()
    for n in range(60):
        junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 2000)))
        if n % 3 == 0:
            junk = b"{" + junk  # looks like JSON to the first glance
        stamp = int(time.time())
        for path, headers in (
            ("/webhooks/error", sign_generic(SIGNING_SECRET.encode(), junk, stamp)),
            (
                "/webhooks/github",
                {
                    "X-GitHub-Event": rng.choice(["workflow_run", "issue_comment", "push", ""]),
                    "X-GitHub-Delivery": f"junk-{n}",
                    "X-Hub-Signature-256": sign_github(GITHUB_SECRET.encode(), junk),
                },
            ),
            (
                "/webhooks/sentry",
                {
                    "Sentry-Hook-Resource": "event_alert",
                    "Sentry-Hook-Timestamp": str(stamp),
                    "Sentry-Hook-Signature": sign_sentry(SENTRY_SECRET.encode(), junk),
                },
            ),
        ):
            statuses.add(shared_server.request("POST", path, junk, {"Content-Type": "application/json", **headers})[0])
    for method, path in (("GET", "/"), ("GET", "/webhooks/github"), ("POST", "/nope"), ("DELETE", "/healthz")):
        statuses.add(shared_server.request(method, path, b"", {})[0])
    assert statuses <= {202, 400, 404, 405, 422}, statuses  # 202: a valid JSON object GitHub sends for "push"
    assert {400, 404, 405} <= statuses
    assert shared_server.request("GET", "/healthz")[0] == 200
    assert '"level": "error"' not in shared_server.log()


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(REPO, "main").start()
    fake.state.workflows = {"selfix.yml"}
    fake.state.declared_inputs = {"ref", "description", "error", "signal"}
    yield fake
    fake.stop()


def _send_all(server: ServeProcess, requests: list[tuple[str, bytes, dict[str, str]]], threads: int = 8) -> list[int]:
    statuses: list[int] = []
    lock = threading.Lock()
    todo = list(enumerate(requests))

    def work() -> None:
        while True:
            with lock:
                if not todo:
                    return
                _, (path, body, headers) = todo.pop()
            status = server.request("POST", path, body, headers)[0]
            with lock:
                statuses.append(status)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=120)
    return statuses


def _wait_for(condition: object, timeout: float = 20.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_the_same_error_500_times_is_one_fingerprint_and_one_dispatch(tmp_path: Path, fake_github: FakeGitHub) -> None:
    port = free_port()
    config = write_config(tmp_path, port, dispatch=True, github_api_url=fake_github.url, dispatch_interval_seconds=0.2)
    server = ServeProcess(config, port).start()
    try:
        requests = [("/webhooks/error", *error_request(traceback_text(n))) for n in range(450)]
        requests += [("/webhooks/sentry", *sentry_request(_sentry_alert_like_traceback(n))) for n in range(50)]
        statuses = _send_all(server, requests)
        assert statuses == [202] * 500
        fingerprints = rows(tmp_path / "serve.sqlite3", "SELECT fingerprint, count FROM fingerprints")
        assert len(fingerprints) == 1 and fingerprints[0][1] == 500
        fingerprint = fingerprints[0][0]
        _wait_for(lambda: _state(server, fingerprint) == "dispatched")
        time.sleep(0.5)  # a few more dispatch rounds: still one dispatch
        assert len(fake_github.state.dispatches) == 1
        dispatch = fake_github.state.dispatches[0]
        assert dispatch["workflow"] == "selfix.yml" and dispatch["ref"] == "main"
        assert dispatch["inputs"]["signal"] == fingerprint
        assert dispatch["inputs"]["ref"] == "main"
        first = rows(
            tmp_path / "serve.sqlite3", "SELECT s.heal FROM signals s JOIN fingerprints f ON s.id = f.signal_id"
        )
        assert dispatch["inputs"]["error"] == json.loads(first[0][0])["error"]  # the first occurrence's error
        assert "ValueError" in dispatch["inputs"]["error"] and "cart.py" in dispatch["inputs"]["error"]
        status, _ = server.request("GET", f"/signals/{fingerprint}")
        assert status == 401  # the state endpoint wants the admin token
        _, metrics = server.request("GET", "/metrics")
        assert "selfix_serve_deduplicated_total 499" in metrics
        assert "selfix_serve_dispatched_total 1" in metrics
        assert 'selfix_serve_fingerprints{state="dispatched"} 1' in metrics
        events = [e for e in server.log_events() if e.get("event") == "dispatched"]
        assert [e["fingerprint"] for e in events] == [fingerprint]
    finally:
        server.stop()


def _sentry_alert_like_traceback(n: int) -> dict[str, object]:
    """The error of ``traceback_text`` as Sentry reports it: the same fingerprint, from another source."""
    frames = [
        {"abs_path": "/srv/app/shop/views.py", "function": "checkout", "lineno": 10 + n, "in_app": True},
        {"abs_path": "/srv/app/shop/cart.py", "function": "parse", "lineno": 40 + n, "in_app": True},
    ]
    event = {
        "event_id": f"{n:032x}",
        "url": f"https://sentry.io/api/0/projects/acme/backend/events/{n}/",
        "exception": {
            "values": [{"type": "ValueError", "module": "builtins", "value": f"x{n}", "stacktrace": {"frames": frames}}]
        },
    }
    return {"action": "triggered", "data": {"event": event}}


def _state(server: ServeProcess, fingerprint: str) -> str:
    status, found = server.request("GET", f"/signals/{fingerprint}", headers=server.admin())
    return str(found["state"]) if status == 200 else ""


def test_a_restart_keeps_every_signal_and_still_refuses_replays(tmp_path: Path) -> None:
    port = free_port()
    server = ServeProcess(write_config(tmp_path, port), port).start()
    first = [error_request(traceback_text(n)) for n in range(20)]
    runs = [github_request("workflow_run", failed_run(500 + n)) for n in range(10)]
    for body, headers in first:
        assert server.request("POST", "/webhooks/error", body, headers)[0] == 202
    for body, headers in runs:
        assert server.request("POST", "/webhooks/github", body, headers)[0] == 202
    server.stop()
    database = tmp_path / "serve.sqlite3"
    before = stored_counts(database)
    assert before == (30, 30, 11)

    server = ServeProcess(write_config(tmp_path, port), port).start()
    try:
        assert stored_counts(database) == before
        body, headers = runs[0]
        assert server.request("POST", "/webhooks/github", body, headers)[0] == 401  # replayed across the restart
        body, headers = error_request(traceback_text(99))
        status, answer = server.request("POST", "/webhooks/error", body, headers)
        assert status == 202 and answer["count"] == 21 and answer["new"] is False
        pending = rows(database, "SELECT COUNT(*) FROM fingerprints WHERE state = 'pending'")[0][0]
        assert pending == 11  # dispatch is off here: every heal waits, none was forgotten
    finally:
        server.stop()


@pytest.mark.slow
def test_kill_9_mid_load_loses_no_acknowledged_signal(tmp_path: Path) -> None:
    """A few seconds of signed load from threads, ``kill -9`` mid-load, a restart on the same database, more
    load: every request that got a 2xx is stored exactly once, nothing is stored twice."""
    port = free_port()
    config = write_config(tmp_path, port)
    server = ServeProcess(config, port).start()
    sent: list[tuple[str, int]] = []  # (identity, status)
    lock = threading.Lock()
    stop = threading.Event()
    counter = iter(range(10**9))

    def client() -> None:
        while not stop.is_set():
            with lock:
                n = next(counter)
            if n % 2:
                body, headers = github_request("workflow_run", failed_run(1_000_000 + n))
                path, identity = "/webhooks/github", "github:" + headers["X-GitHub-Delivery"]
            else:
                body, headers = error_request(traceback_text(n, function=f"f{n % 7}"))
                path, identity = "/webhooks/error", "error:" + headers["X-Selfix-Signature"][7:]
            try:
                status = server.request("POST", path, body, headers, timeout=5.0)[0]
            except (OSError, http.client.HTTPException):  # refused, reset, or cut mid-answer by the kill
                status = 0
                time.sleep(0.01)
            with lock:
                sent.append((identity, status))

    threads = [threading.Thread(target=client) for _ in range(6)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    server.kill()
    killed_at = len(sent)
    server = ServeProcess(config, port).start()
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    server.stop()

    database = tmp_path / "serve.sqlite3"
    stored = rows(database, "SELECT delivery, COUNT(*) FROM signals GROUP BY delivery")
    acked = [identity for identity, status in sent if status == 202]
    assert killed_at > 50 and len(acked) > 100  # load before and after the kill
    assert all(count == 1 for _, count in stored)
    stored_ids = {identity for identity, _ in stored}
    lost = set(acked) - stored_ids
    assert not lost, (lost, [e for e in ServeProcess(config, port).log_events() if e.get("delivery") in lost])
    assert stored_ids <= {identity for identity, _ in sent}
    assert rows(database, "SELECT COUNT(*) FROM (SELECT digest FROM signals GROUP BY digest HAVING COUNT(*) > 1)") == [
        (0,)
    ]
    assert rows(database, "PRAGMA integrity_check") == [("ok",)]
    assert os.path.getsize(database) > 0
