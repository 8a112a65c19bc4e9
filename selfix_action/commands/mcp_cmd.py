"""``selfix mcp``: serve selfix's sandboxed tools over the Model Context Protocol (stdio).

A front end only: the flags become the one ``HealRequest`` every tool call starts from (the same translation as
``selfix fix``: ``fix_cmd.fix_request``), then the server in ``selfix_action.mcp_server`` serves it. The ``mcp``
SDK is an optional extra: without it this exits 2 saying how to install it."""

from __future__ import annotations

import importlib
from typing import Protocol

from selfix_action.commands.fix_cmd import FixOptions, fix_request
from selfix_action.errors import InputError
from selfix_action.heal import HealRequest

SERVER_MODULE = "selfix_action.mcp_server.server"
MCP_MISSING = (
    "selfix mcp needs the MCP Python SDK, which this installation does not hold: "
    "pip install 'selfix-action[mcp]' (or pip install 'mcp>=2.3,<3')"
)


class _Server(Protocol):
    def serve(self, base: HealRequest) -> None: ...


def mcp_request(options: FixOptions) -> HealRequest:
    """The request every tool call starts from: ``selfix fix``'s for these options."""
    return fix_request(options)


def run_mcp(options: FixOptions) -> int:
    """Serve until the client closes stdin; exit 2 (bad input) where the SDK is not installed."""
    base = mcp_request(options)
    try:
        server: _Server = importlib.import_module(SERVER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != "mcp" and not (exc.name or "").startswith("mcp."):
            raise  # the SDK is there but lacks a dependency: its own traceback says which
        raise InputError(MCP_MISSING) from exc
    server.serve(base)
    return 0
