"""Node test runners for the tests: jest (with jest-junit), vitest and mocha, installed from the npm registry once
per machine into a cache (a lock keeps two xdist workers from installing at once), and small projects that use
them. Without node, npm or the registry the caller skips, saying which."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGES = ("jest@29.7.0", "jest-junit@16.0.0", "vitest@2.1.9", "mocha@10.8.2")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "selfix-tests" / "node-runners-1"


def node_runners() -> Path:
    """The cache folder whose ``node_modules`` holds the runners (installed on first use)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not on PATH")
    marker = CACHE / "installed"
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE.parent / "node-runners.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.is_file():
            _install(marker)
    return CACHE


def _install(marker: Path) -> None:
    (CACHE / "package.json").write_text('{"name": "runners", "private": true}\n')
    try:
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", *PACKAGES],
            cwd=CACHE, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of the runners took over 10 minutes")
    if done.returncode != 0:
        pytest.skip(f"npm could not install the runners (no registry?): {done.stderr.strip()[-300:]}")
    marker.write_text(" ".join(PACKAGES))


def install_into(project: Path) -> None:
    """The runners as the project's own ``node_modules`` (a real folder, as ``npm ci`` leaves it: the sandbox
    copies it; a link into the cache would point into the hidden home). Hard links: fast and small."""
    shutil.copytree(node_runners() / "node_modules", project / "node_modules", symlinks=True, copy_function=os.link)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
