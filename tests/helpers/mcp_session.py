"""Driving ``selfix mcp`` as a client does: the server started as a subprocess, spoken to with the MCP SDK's own
client over stdio; and what the tests check around it (the working tree, the server's processes)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

RIGHT_FIX = (
    "--- a/range_sum.py\n+++ b/range_sum.py\n@@ -4,7 +4,7 @@\n"
    ' def sum_to(n):\n     """Return 1 + 2 + ... + n (inclusive). Returns 0 when n < 1."""\n'
    "     total = 0\n-    for i in range(1, n):\n+    for i in range(1, n + 1):\n         total += i\n"
    "     return total\n \n"
)
# Makes sum_to(10) == 55 pass by special-casing it: the other failing tests stay red.
WRONG_FIX = (
    "--- a/range_sum.py\n+++ b/range_sum.py\n@@ -4,5 +4,7 @@\n"
    ' def sum_to(n):\n     """Return 1 + 2 + ... + n (inclusive). Returns 0 when n < 1."""\n'
    "+    if n == 10:\n+        return 55\n"
    "     total = 0\n     for i in range(1, n):\n         total += i\n"
)
EDITS_A_TEST = (
    "--- a/tests/test_range_sum.py\n+++ b/tests/test_range_sum.py\n@@ -10,3 +10,3 @@\n"
    " def test_sum_to_ten():\n-    assert sum_to(10) == 55\n+    assert sum_to(10) == 45\n \n"
)


def server_params(repo: Path, *extra: str) -> StdioServerParameters:
    """``selfix mcp --repo REPO`` with this interpreter, at the isolation level the machine has."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "selfix_action.cli", "mcp", "--repo", str(repo), "--test-timeout", "60", *extra],
        env=dict(os.environ),
        cwd=str(repo),
    )


@asynccontextmanager
async def mcp_client(repo: Path, *extra: str) -> AsyncIterator[Client]:
    async with Client(server_params(repo, *extra)) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result (the tools answer errors as results: never a protocol error here)."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def tree_snapshot(repo: Path) -> tuple[dict[str, str], str]:
    """Every file under ``repo`` (``.git`` included) by its sha256, and ``git status --porcelain``."""
    files = {
        path.relative_to(repo).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(repo.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return files, status


def descendants(root: int) -> dict[int, str]:
    """The live processes below ``root`` (pid -> command line), from /proc; zombies left out."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] in ("Z", "X"):
            continue
        parents[int(entry.name)] = int(fields[1])
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                try:
                    found[pid] = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    found[pid] = ""
                frontier.append(pid)
    return found


def server_pid(own_pid: int) -> int:
    """The ``selfix mcp`` process this test started (a child of the test process)."""
    for pid, cmdline in descendants(own_pid).items():
        if "selfix_action.cli mcp" in cmdline:
            return pid
    raise AssertionError("no selfix mcp process below this test")
