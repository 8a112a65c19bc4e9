"""A real ``selfix serve`` process per test module or test, and its database read back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.serve_server import ServeProcess, free_port, write_config


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One server for the refusal tests (each checks what it added to the database, nothing else)."""
    folder = tmp_path_factory.mktemp("serve")
    port = free_port()
    server = ServeProcess(write_config(folder, port, max_body_bytes=64 * 1024), port).start()
    yield server
    server.stop()


@pytest.fixture
def database(shared_server: ServeProcess) -> Path:
    return shared_server.config.parent / "serve.sqlite3"
