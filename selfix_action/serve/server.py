"""``serve(config)``: the application under uvicorn, logging JSON lines to stderr, until SIGINT or SIGTERM."""

from __future__ import annotations

import logging

import uvicorn

from selfix_action.serve.app import build_app
from selfix_action.serve.config import ServeConfig
from selfix_action.serve.dispatch import run_local_heal
from selfix_action.serve.observe import JSONLineFormatter, configure_logging


def serve(config: ServeConfig) -> None:
    configure_logging()
    handler = logging.StreamHandler()
    handler.setFormatter(JSONLineFormatter())
    for name in ("uvicorn", "uvicorn.error"):  # uvicorn's own start-up and error lines, as JSON lines too
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    app = build_app(config, local_job=run_local_heal)
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_config=None,
        access_log=False,  # the receivers log each request themselves, with its source and fingerprint
        server_header=False,
        lifespan="on",
        timeout_graceful_shutdown=10,
    )
