"""The Starlette application: three webhook receivers, health, metrics and (with an admin token) a signal's state.

A request is checked in the order that costs least to refuse: size by Content-Length, content type, the body read
under the size cap, the signature over the raw bytes, only then JSON. Nothing a client sends produces a 500: every
refusal is a 4xx with a one-line JSON reason, and an accepted signal is answered 202 only after the transaction
that stores it committed.
"""

from __future__ import annotations

import asyncio
import hmac
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from selfix_action.serve.config import ServeConfig
from selfix_action.serve.dispatch import ActionsDispatcher, DispatchLoop, LocalJob, LocalPool
from selfix_action.serve.observe import Gauges, Labels, Metrics, log
from selfix_action.serve.signals import BadPayload, Ignored, Signal, read_generic, read_github, read_sentry_alert
from selfix_action.serve.signatures import (
    SignatureRefused,
    Verified,
    verify_generic,
    verify_github,
    verify_sentry,
)
from selfix_action.serve.store import Accepted, QueueFull, Recorded, Replayed, Store, accept, record

JSON_TYPES = ("application/json",)


class Refusal(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason  # the metrics' label
        self.message = message


@dataclass
class Runtime:
    """What the handlers share, built at startup."""

    config: ServeConfig
    store: Store
    metrics: Metrics
    dispatch: DispatchLoop | None
    pool: LocalPool | None


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise Refusal(400, "body", "Content-Length is not a number")
        if int(declared) > limit:
            raise Refusal(413, "too_large", f"the body is larger than {limit} bytes")
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type not in JSON_TYPES:
        raise Refusal(415, "content_type", "the body must be application/json")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():  # a chunked body has no Content-Length: counted as it arrives
        size += len(chunk)
        if size > limit:
            raise Refusal(413, "too_large", f"the body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _verify(source: str, request: Request, body: bytes, config: ServeConfig) -> Verified:
    now = time.time()
    window = float(config.replay_window_seconds)
    headers = request.headers
    secrets = config.secrets
    if source == "github":
        return verify_github(headers, body, secrets.github_webhook)
    if source == "sentry":
        return verify_sentry(headers, body, secrets.sentry_client, now, window)
    return verify_generic(headers, body, secrets.signing, now, window)


def _read(source: str, request: Request, body: bytes, config: ServeConfig) -> Signal | Ignored:
    if source == "github":
        if request.headers.get("x-github-event") == "ping":
            return Ignored("ping")
        return read_github(request.headers.get("x-github-event", ""), body, config)
    if source == "sentry":
        return read_sentry_alert(request.headers.get("sentry-hook-resource", ""), body, config)
    return read_generic(body, config)


def _receiver(source: str) -> Callable[[Request], Any]:
    async def receive(request: Request) -> Response:
        runtime: Runtime = request.app.state.runtime
        metrics = runtime.metrics
        metrics.count("selfix_serve_received_total", source=source)
        delivery = ""
        try:
            body = await _read_body(request, runtime.config.max_body_bytes)
            try:
                verified = _verify(source, request, body, runtime.config)
            except SignatureRefused as exc:
                raise Refusal(401, f"signature_{exc.reason}", f"signature refused: {exc.reason}") from None
            delivery = verified.identity
            try:
                signal = _read(source, request, body, runtime.config)
            except BadPayload as exc:
                raise Refusal(exc.status, "body", str(exc)) from None
            operation = (
                record(verified.identity, source, signal.reason)
                if isinstance(signal, Ignored)
                else accept(verified.identity, source, verified.digest, signal)
            )
            try:
                outcome = await asyncio.wrap_future(runtime.store.submit(operation))
            except QueueFull:
                raise Refusal(503, "busy", "the server is saturated: retry later") from None
            except sqlite3.Error as exc:  # the disk, not the client: 503, and the sender delivers again
                log().error("database error", extra={"event": "store_error", "error": str(exc), "source": source})
                raise Refusal(503, "database", "the database cannot store the signal: retry later") from None
        except Refusal as refusal:
            metrics.count("selfix_serve_refused_total", reason=refusal.reason)
            log().info(
                "refused",
                extra={
                    "event": "refused",
                    "source": source,
                    "delivery": delivery,
                    "status": refusal.status,
                    "reason": refusal.reason,
                },
            )
            headers = {"retry-after": "5"} if refusal.status == 503 else None
            return JSONResponse({"error": refusal.message}, status_code=refusal.status, headers=headers)
        return _answer(source, delivery, outcome, metrics)

    return receive


def _answer(source: str, delivery: str, outcome: Accepted | Recorded | Replayed, metrics: Metrics) -> Response:
    fields: dict[str, Any] = {"source": source, "delivery": delivery}
    if isinstance(outcome, Replayed):
        metrics.count("selfix_serve_refused_total", reason="replay")
        log().info("refused", extra={"event": "refused", "status": 401, "reason": "replay", **fields})
        return JSONResponse({"error": "signature refused: this delivery was already received"}, status_code=401)
    if isinstance(outcome, Recorded):
        metrics.count("selfix_serve_ignored_total", source=source)
        log().info("ignored", extra={"event": "ignored", "status": 202, "reason": outcome.reason, **fields})
        return JSONResponse({"ignored": outcome.reason}, status_code=202)
    metrics.count("selfix_serve_accepted_total", source=source)
    if not outcome.new:
        metrics.count("selfix_serve_deduplicated_total")
    log().info(
        "accepted",
        extra={
            "event": "accepted",
            "status": 202,
            "fingerprint": outcome.fingerprint,
            "count": outcome.count,
            **fields,
        },
    )
    return JSONResponse(
        {"signal": outcome.signal_id, "fingerprint": outcome.fingerprint, "count": outcome.count, "new": outcome.new},
        status_code=202,
    )


async def healthz(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    if runtime.store.healthy():
        return JSONResponse({"status": "ok"})
    return JSONResponse({"status": "database unavailable"}, status_code=503)


async def metrics(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    store = runtime.store

    def states() -> Mapping[Labels, float]:
        counts = store.states()
        return {(("state", s),): float(counts.get(s, 0)) for s in ("pending", "dispatched", "failed", "done")}

    def depth() -> Mapping[Labels, float]:
        return {(): float(store.depth)}

    gauges: Gauges = {
        "selfix_serve_queue_depth": ("Operations waiting for the database writer.", depth),
        "selfix_serve_fingerprints": ("Distinct signals, by dispatch state.", states),
    }
    return PlainTextResponse(runtime.metrics.render(gauges), media_type="text/plain; version=0.0.4")


async def signal_state(request: Request) -> Response:
    """``GET /signals/<fingerprint>``: its count and dispatch state (the last error), for the admin token only."""
    runtime: Runtime = request.app.state.runtime
    token = runtime.config.secrets.admin_token
    if not token:
        return JSONResponse({"error": "not found"}, status_code=404)  # no admin token: the endpoint is off
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(f"Bearer {token}".encode(), given.encode("utf-8", "replace")):
        return JSONResponse({"error": "a bearer token is required"}, status_code=401)
    found = runtime.store.fingerprint(request.path_params["fingerprint"])
    if found is None:
        return JSONResponse({"error": "no such fingerprint"}, status_code=404)
    return JSONResponse(found)


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "not found"}, status_code=404)


async def _method_not_allowed(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "method not allowed"}, status_code=405)


def build_app(
    config: ServeConfig,
    *,
    local_job: Callable[[LocalJob], int] | None = None,
    actions: ActionsDispatcher | None = None,
) -> Starlette:
    """The application; the store, the dispatcher thread and the pool live from its startup to its shutdown."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = Store(config.database, config.queue_size)
        counters = Metrics()
        pool = None
        loop = None
        if config.dispatch:
            if config.local is not None and local_job is not None:
                pool = LocalPool(config.local, local_job, store, counters)
            dispatcher = actions
            if dispatcher is None and config.repositories:
                dispatcher = ActionsDispatcher(config.repositories, config.secrets.github_token, config.github_api_url)
            loop = DispatchLoop(config, store, counters, dispatcher, pool)
            loop.start()
        app.state.runtime = Runtime(config, store, counters, loop, pool)
        log().info("serving", extra={"event": "started"})
        try:
            yield
        finally:
            if loop is not None:
                loop.stop()
            if pool is not None:
                pool.close()
            store.close()
            log().info("stopped", extra={"event": "stopped"})

    routes = [
        Route("/webhooks/github", _receiver("github"), methods=["POST"]),
        Route("/webhooks/sentry", _receiver("sentry"), methods=["POST"]),
        Route("/webhooks/error", _receiver("error"), methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/signals/{fingerprint:path}", signal_state, methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: _not_found, 405: _method_not_allowed},
    )
