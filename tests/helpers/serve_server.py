"""``selfix serve`` as a real process on 127.0.0.1 (a free port), and a client that signs like GitHub, Sentry and
the generic source do. The server runs this checkout's code: PYTHONPATH and cwd are the repository's root."""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from selfix_action.serve.signatures import sign_generic, sign_github, sign_sentry
from selfix_bench import serve_load

ROOT = Path(__file__).resolve().parents[2]
GITHUB_SECRET = "gh-webhook-secret-for-tests"
SENTRY_SECRET = "sentry-client-secret-for-tests"
SIGNING_SECRET = "generic-signing-secret-for-tests"
ADMIN_TOKEN = "admin-token-for-tests"
REPO = "octo-org/octo-repo"


def free_port() -> int:
    """A free port below Linux's ephemeral range, at random (the benchmark's own choice, ``serve_load.free_port``):
    a port the kernel hands out for port 0 could go to another test's server while this one restarts on it (a
    kill -9 test), and its clients would then be answered by the wrong server."""
    return serve_load.free_port()


def write_config(folder: Path, port: int, **overrides: Any) -> Path:
    config: dict[str, Any] = {
        "listen": f"127.0.0.1:{port}",
        "database": "serve.sqlite3",
        "dispatch": False,
        "repositories": [{"repo": REPO, "workflow": "selfix.yml", "ref": "main", "sentry_projects": ["backend"]}],
    }
    config.update(overrides)
    path = folder / "serve.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SELFIX_SERVE_")}
    env.update(
        PYTHONPATH=str(ROOT),
        SELFIX_SERVE_GITHUB_WEBHOOK_SECRET=GITHUB_SECRET,
        SELFIX_SERVE_SENTRY_CLIENT_SECRET=SENTRY_SECRET,
        SELFIX_SERVE_SIGNING_SECRET=SIGNING_SECRET,
        SELFIX_SERVE_ADMIN_TOKEN=f"{ADMIN_TOKEN}-{uuid.uuid4().hex}",  # each server its own: start() knows it
        SELFIX_SERVE_GITHUB_TOKEN="token-for-tests",
    )
    env.update(extra)
    return env


@dataclass
class ServeProcess:
    config: Path
    port: int
    env: dict[str, str] = field(default_factory=server_env)
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    def start(self, timeout: float = 30.0) -> ServeProcess:
        self.log_path = self.config.parent / "serve.log"
        log = open(self.log_path, "ab")  # the child writes to it; closed in stop() or kill()
        self._log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "selfix_action.cli", "serve", "--config", str(self.config)],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=log,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"selfix serve exited {self.proc.returncode}: {self.log()}")
            try:
                if self.request("GET", "/healthz", timeout=1.0)[0] == 200:
                    # This process's server, not another test's on a reused port: only it knows this admin token.
                    status, _ = self.request("GET", "/signals/probe", headers=self.admin(), timeout=1.0)
                    if status != 404 or self.proc.poll() is not None:
                        self.kill()
                        raise AssertionError(f"another server answers on port {self.port}: {self.log()}")
                    return self
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"selfix serve did not answer /healthz in {timeout} s: {self.log()}")

    def admin(self) -> dict[str, str]:
        """The header of ``GET /signals/<fingerprint>``."""
        return {"Authorization": f"Bearer {self.env['SELFIX_SERVE_ADMIN_TOKEN']}"}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def log_events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log().splitlines() if line.startswith("{")]

    def kill(self) -> None:
        """``kill -9``: no shutdown, no flush."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._close_log()

    def stop(self) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._close_log()
        return int(self.proc.returncode)

    def _close_log(self) -> None:
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode(errors="replace")


# -- signed requests ------------------------------------------------------------------------------------------
def github_request(event: str, payload: dict[str, Any], delivery: str | None = None) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    return body, {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign_github(GITHUB_SECRET.encode(), body),
    }


def sentry_request(payload: dict[str, Any], timestamp: int | None = None) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    return body, {
        "Content-Type": "application/json",
        "Sentry-Hook-Resource": "event_alert",
        "Sentry-Hook-Timestamp": str(int(time.time()) if timestamp is None else timestamp),
        "Sentry-Hook-Signature": sign_sentry(SENTRY_SECRET.encode(), body),
    }


def error_request(error: str, repo: str = REPO, timestamp: int | None = None) -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"repo": repo, "error": error}).encode()
    stamp = int(time.time()) if timestamp is None else timestamp
    return body, {"Content-Type": "application/json", **sign_generic(SIGNING_SECRET.encode(), body, stamp)}


def failed_run(run_id: int, repo: str = REPO, conclusion: str = "failure", action: str = "completed") -> dict[str, Any]:
    return {
        "action": action,
        "repository": {"full_name": repo},
        "workflow_run": {
            "id": run_id,
            "conclusion": conclusion,
            "head_branch": "feature/x",
            "head_repository": {"full_name": repo},
        },
    }


def traceback_text(n: int, function: str = "parse") -> str:
    """A Python traceback whose message (and line numbers) vary with ``n`` but whose fingerprint does not."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "/srv/app/shop/views.py", line {10 + n % 7}, in checkout\n'
        "    total = cart.total()\n"
        f'  File "/srv/app/shop/cart.py", line {40 + n % 5}, in {function}\n'
        "    return int(value)\n"
        f"ValueError: invalid literal for int() with base 10: 'x{n}'\n"
    )


# -- the database, read back ---------------------------------------------------------------------------------
def rows(database: Path, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(database)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def stored_counts(database: Path) -> tuple[int, int, int]:
    """Deliveries, signals and fingerprints in the database."""
    return (
        rows(database, "SELECT COUNT(*) FROM deliveries")[0][0],
        rows(database, "SELECT COUNT(*) FROM signals")[0][0],
        rows(database, "SELECT COUNT(*) FROM fingerprints")[0][0],
    )
