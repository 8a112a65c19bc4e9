"""``selfix bench serve-load``: signed webhook load on a real ``selfix serve`` process, a ``kill -9`` in the
middle, a restart on the same database, then the database read back against what the clients were told.

What it shows: the receiver keeps up with ``--rate`` signed requests per second, and every request answered 2xx
is in the database exactly once, across the kill (an ack is sent only after the signal's transaction committed).
A request in flight at the kill may be stored without its client hearing back (counted apart: it is not lost, the
sender sees a connection error and GitHub or Sentry would redeliver it). Loopback only, bounded in time.

The mix: distinct production errors (generic source, one fingerprint each), repeats of a few errors (generic and
Sentry, the message and line numbers varying: one fingerprint each, counted), failed ``workflow_run`` events.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import random
import secrets
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from selfix_action.errors import InputError
from selfix_action.serve.signatures import sign_generic, sign_github, sign_sentry
from selfix_action.tracebacks import read_error

ROOT = Path(__file__).resolve().parents[1]
REPO = "bench-org/bench-repo"
SENTRY_PROJECT = "bench-backend"
REPEATED_ERRORS = 5  # distinct errors the repeats cycle through
CLIENT_THREADS = 48
REQUEST_TIMEOUT = 10.0


@dataclass
class Sent:
    kind: str  # distinct | repeat | sentry | workflow_run
    fingerprint: str  # what the server should file it under
    identity: str  # the delivery identity the server records
    status: int = 0  # 0: connection error or timeout
    latency: float = 0.0
    scheduled: float = 0.0


@dataclass
class Load:
    rate: float
    seconds: float
    kill_at: float
    port: int
    folder: Path
    secrets: dict[str, bytes] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    restart_seconds: float = 0.0


def _traceback(function: str, n: int) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/srv/app/shop/views.py", line {10 + n % 7}, in handle\n'
        "    result = step()\n"
        f'  File "/srv/app/shop/{function}.py", line {40 + n % 5}, in {function}\n'
        "    return int(value)\n"
        f"ValueError: invalid literal for int() with base 10: 'x{n}'\n"
    )


def _sentry_event(function: str, n: int) -> dict[str, Any]:
    frames = [
        {"abs_path": "/srv/app/shop/views.py", "filename": "shop/views.py", "function": "handle", "lineno": 10 + n % 7,
         "in_app": True, "module": "shop.views"},
        {"abs_path": f"/srv/app/shop/{function}.py", "filename": f"shop/{function}.py", "function": function,
         "lineno": 40 + n % 5, "in_app": True, "module": f"shop.{function}"},
    ]  # fmt: skip
    event = {
        "event_id": uuid.uuid4().hex,
        "url": f"https://sentry.io/api/0/projects/bench-org/{SENTRY_PROJECT}/events/{n}/",
        "exception": {
            "values": [
                {
                    "type": "ValueError",
                    "module": "builtins",
                    "value": f"invalid literal for int() with base 10: 'x{n}'",
                    "stacktrace": {"frames": frames},
                }
            ]
        },
    }
    return {"action": "triggered", "data": {"event": event, "triggered_rule": "selfix"}}


def _fingerprint(text: str) -> str:
    return f"error:{REPO}:{read_error(text).fingerprint}"


def _request(load: Load, n: int) -> tuple[str, bytes, dict[str, str], Sent]:
    """Request ``n`` of the mix: 40% distinct errors, 30% repeats (generic), 10% repeats (Sentry), 20% runs."""
    slot = n % 10
    now = int(time.time())
    if slot < 4:
        text = _traceback(f"distinct_{n}", n)
        body = json.dumps({"repo": REPO, "error": text}).encode()
        headers = sign_generic(load.secrets["generic"], body, now)
        sent = Sent("distinct", _fingerprint(text), "error:" + headers["X-Selfix-Signature"][7:])
        return "/webhooks/error", body, headers, sent
    if slot < 7:
        text = _traceback(f"repeat_{n // 10 % REPEATED_ERRORS}", n)
        body = json.dumps({"repo": REPO, "error": text}).encode()
        headers = sign_generic(load.secrets["generic"], body, now)
        sent = Sent("repeat", _fingerprint(text), "error:" + headers["X-Selfix-Signature"][7:])
        return "/webhooks/error", body, headers, sent
    if slot < 8:
        event = _sentry_event(f"repeat_{n // 10 % REPEATED_ERRORS}", n)  # the same errors: one fingerprint each
        body = json.dumps(event).encode()
        digest = sign_sentry(load.secrets["sentry"], body)
        headers = {
            "Sentry-Hook-Resource": "event_alert",
            "Sentry-Hook-Timestamp": str(now),
            "Sentry-Hook-Signature": digest,
        }
        fingerprint = _fingerprint(json.dumps(event))
        return "/webhooks/sentry", body, headers, Sent("sentry", fingerprint, f"sentry:{digest}")
    run_id = 10_000_000 + n
    payload = {
        "action": "completed",
        "repository": {"full_name": REPO},
        "workflow_run": {"id": run_id, "conclusion": "failure", "head_branch": "main",
                         "head_repository": {"full_name": REPO}},
    }  # fmt: skip
    body = json.dumps(payload).encode()
    delivery = str(uuid.uuid4())
    headers = {
        "X-GitHub-Event": "workflow_run",
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign_github(load.secrets["github"], body),
    }
    return "/webhooks/github", body, headers, Sent("workflow_run", f"github:{REPO}:run:{run_id}", f"github:{delivery}")


class Server:
    """``selfix serve`` as a child process of this checkout's code."""

    def __init__(self, load: Load, config: Path) -> None:
        self._config = config
        self._load = load
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_path = load.folder / "serve.log"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SELFIX_SERVE_")}
        env.update(
            PYTHONPATH=str(ROOT),
            SELFIX_SERVE_GITHUB_WEBHOOK_SECRET=self._load.secrets["github"].decode(),
            SELFIX_SERVE_SENTRY_CLIENT_SECRET=self._load.secrets["sentry"].decode(),
            SELFIX_SERVE_SIGNING_SECRET=self._load.secrets["generic"].decode(),
        )
        return env

    def start(self, timeout: float = 30.0) -> None:
        with open(self._log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "selfix_action.cli", "serve", "--config", str(self._config)],
                cwd=ROOT,
                env=self.env(),
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise InputError(f"selfix serve exited {self.proc.returncode}; its log: {self._log_path}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self._load.port, timeout=1.0)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.02)
        self.kill()
        raise InputError(f"selfix serve did not become healthy in {timeout:.0f} s; its log: {self._log_path}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def _client(load: Load, tickets: queue.Queue[int | None], lock: threading.Lock) -> None:
    conn: http.client.HTTPConnection | None = None
    while True:
        n = tickets.get()
        if n is None:
            break
        path, body, headers, sent = _request(load, n)
        headers["Content-Type"] = "application/json"
        sent.scheduled = n / load.rate
        started = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", load.port, timeout=REQUEST_TIMEOUT)
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            sent.status = response.status
            sent.latency = time.monotonic() - started
            if response.getheader("connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            sent.status = 0  # refused, reset or timed out: not retried (a new delivery would be a new request)
            if conn is not None:
                conn.close()
            conn = None
        with lock:
            load.sent.append(sent)
    if conn is not None:
        conn.close()


def free_port() -> int:
    """A free port below Linux's ephemeral range, at random: the server restarts on it after the kill, and a port the
    kernel hands out for port 0 could meanwhile go to another process."""
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, 32000)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise InputError("no free port in 20000-31999 on 127.0.0.1")


def run_load(rate: float, seconds: float, kill_at: float, folder: Path) -> tuple[Load, float]:
    load = Load(rate=rate, seconds=seconds, kill_at=kill_at, port=free_port(), folder=folder)
    load.secrets = {name: secrets.token_hex(32).encode() for name in ("github", "sentry", "generic")}
    config = folder / "serve.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "listen": f"127.0.0.1:{load.port}",
                "database": "serve.sqlite3",
                "dispatch": False,  # the receiver alone is measured: no heal leaves the machine
                "repositories": [{"repo": REPO, "sentry_projects": [SENTRY_PROJECT]}],
            }
        ),
        encoding="utf-8",
    )
    server = Server(load, config)
    server.start()
    tickets: queue.Queue[int | None] = queue.Queue()
    lock = threading.Lock()
    clients = [threading.Thread(target=_client, args=(load, tickets, lock), daemon=True) for _ in range(CLIENT_THREADS)]
    for thread in clients:
        thread.start()

    def killer() -> None:
        time.sleep(kill_at)
        server.kill()
        restarted = time.monotonic()
        server.start()
        load.restart_seconds = time.monotonic() - restarted

    kill_thread = threading.Thread(target=killer, daemon=True) if 0 < kill_at < seconds else None
    start = time.monotonic()
    if kill_thread is not None:
        kill_thread.start()
    total = int(rate * seconds)
    for n in range(total):  # an open-loop schedule: request n leaves at n / rate, whatever the answers
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        tickets.put(n)
    for _ in clients:
        tickets.put(None)
    for thread in clients:
        thread.join(timeout=REQUEST_TIMEOUT * 3)
    elapsed = time.monotonic() - start
    if kill_thread is not None:
        kill_thread.join(timeout=60)
    server.stop()
    return load, elapsed


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(load: Load, elapsed: float) -> tuple[str, bool]:
    """The side-by-side table and whether nothing acknowledged was lost or stored twice."""
    db = sqlite3.connect(load.folder / "serve.sqlite3")
    try:
        stored = Counter(row[0] for row in db.execute("SELECT delivery FROM signals"))
        digests_twice = db.execute(
            "SELECT COUNT(*) FROM (SELECT digest FROM signals GROUP BY digest HAVING COUNT(*) > 1)"
        )
        twice_by_digest = int(digests_twice.fetchone()[0])
        fingerprints = dict(db.execute("SELECT fingerprint, count FROM fingerprints").fetchall())
    finally:
        db.close()
    acked = [s for s in load.sent if 200 <= s.status < 300]
    refused = [s for s in load.sent if s.status >= 300]
    errors = [s for s in load.sent if s.status == 0]
    missing = [s for s in acked if s.identity not in stored]
    twice = sum(1 for count in stored.values() if count > 1) + twice_by_digest
    sent_ids = {s.identity for s in load.sent}
    unacked_stored = [s for s in load.sent if s.status == 0 and s.identity in stored]
    strangers = [identity for identity in stored if identity not in sent_ids]
    expected: Counter[str] = Counter(s.fingerprint for s in load.sent if s.identity in stored)
    acked_by_fp: Counter[str] = Counter(s.fingerprint for s in acked)
    latencies = sorted(s.latency for s in acked)
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(Counter(s.status for s in refused).items()))
    counts_equal = f"counts equal: {fingerprints == dict(expected)}"
    p50, p99 = _percentile(latencies, 50) * 1000, _percentile(latencies, 99) * 1000
    slowest = f"max {max(latencies, default=0) * 1000:.1f} ms"
    ok = not missing and not twice and not strangers and fingerprints == dict(expected)
    rows = [
        ("target", f"{load.rate:g}/s for {load.seconds:g} s, kill -9 at {load.kill_at:g} s", ""),
        ("sent", str(len(load.sent)), ""),
        ("acknowledged (2xx)", str(len(acked)), ""),
        ("refused (3xx-5xx)", str(len(refused)), statuses),
        ("connection errors", str(len(errors)), "refused or reset while the server was down"),
        ("elapsed", f"{elapsed:.1f} s", f"restart to healthy: {load.restart_seconds:.2f} s"),
        ("achieved rate (sent)", f"{len(load.sent) / elapsed:.1f}/s", ""),
        ("achieved rate (acked)", f"{len(acked) / elapsed:.1f}/s", ""),
        ("stored signals", str(sum(stored.values())), ""),
        ("acknowledged but missing", str(len(missing)), "must be 0"),
        ("stored twice", str(twice), "must be 0"),
        ("stored without an ack", str(len(unacked_stored)), "in flight at the kill: stored, the client saw an error"),
        ("stored but never sent", str(len(strangers)), "must be 0"),
        ("fingerprints stored / expected", f"{len(fingerprints)} / {len(expected)}", counts_equal),
        ("ack latency p50 / p99", f"{p50:.1f} / {p99:.1f} ms", slowest),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    lines = [f"{name:<{width}}  {value:<28} {note}".rstrip() for name, value, note in rows]
    lines.append("")
    lines.append(f"{'repeated fingerprint':<44} {'stored count':>12} {'expected':>9} {'acked':>7}")
    repeats = sorted({s.fingerprint for s in load.sent if s.kind in ("repeat", "sentry")})
    for fp in repeats:
        lines.append(f"{fp:<44} {fingerprints.get(fp, 0):>12} {expected.get(fp, 0):>9} {acked_by_fp.get(fp, 0):>7}")
    kinds = Counter(s.kind for s in acked)
    lines.append("")
    lines.append("acknowledged by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    lines.append("RESULT: " + ("PASS (nothing acknowledged lost, nothing stored twice)" if ok else "FAIL"))
    return "\n".join(lines), ok


def main(argv: Sequence[str], parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> int:
    parser = parser_class(
        prog="selfix bench serve-load",
        description="signed webhook load on selfix serve, kill -9 mid-load, restart, and the database checked",
    )
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second (200)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to send (60)")
    parser.add_argument("--kill-at", type=float, default=30.0, help="kill -9 the server at this second; 0: never")
    parser.add_argument("--keep", type=Path, help="keep the database and the server's log in this folder")
    args = parser.parse_args(list(argv))
    if args.rate <= 0 or not 0 < args.seconds <= 3600 or args.kill_at < 0:
        raise InputError("--rate and --seconds must be positive (--seconds at most 3600), --kill-at not negative")
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        load, elapsed = run_load(args.rate, args.seconds, args.kill_at, args.keep)
        text, ok = report(load, elapsed)
    else:
        with tempfile.TemporaryDirectory(prefix="selfix-serve-load-") as folder:
            load, elapsed = run_load(args.rate, args.seconds, args.kill_at, Path(folder))
            text, ok = report(load, elapsed)
    print(text)
    return 0 if ok else 1
