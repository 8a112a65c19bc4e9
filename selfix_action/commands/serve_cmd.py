"""``selfix serve --config FILE``: the webhook receiver and dispatcher (``selfix_action.serve``).

Starlette and uvicorn are an optional extra: without them this exits 2 saying how to install them."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from selfix_action.errors import InputError
from selfix_action.serve.config import ServeConfig, load_config

SERVER_MODULE = "selfix_action.serve.server"
SERVE_MISSING = (
    "selfix serve needs Starlette and uvicorn, which this installation does not hold: "
    "pip install 'selfix-action[serve]'"
)


class _Server(Protocol):
    def serve(self, config: ServeConfig) -> None: ...


def run_serve(config_path: Path, env: Mapping[str, str] | None = None) -> int:
    config = load_config(config_path, os.environ if env is None else env)
    try:
        server: _Server = importlib.import_module(SERVER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name not in ("starlette", "uvicorn") and not (exc.name or "").startswith(("starlette.", "uvicorn.")):
            raise
        raise InputError(SERVE_MISSING) from exc
    server.serve(config)
    return 0
