"""Git trees of the real-bug kinds (``realbugs``, ``jsbugs``): git run with a timeout and no prompt, a file at a
commit, the paths two commits differ in, and a tree's paths made what they are at a commit. The benchmark's
install steps, not project code: subprocess is allowed here as in the kinds themselves."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from selfix_action.errors import InputError

GIT_TIMEOUT = 600
# A fixed identity and date: the benchmark's own commits (a materialized tree's one commit) are the same each time.
IDENTITY = {
    "GIT_AUTHOR_NAME": "selfix-bench",
    "GIT_AUTHOR_EMAIL": "bench@selfix.invalid",
    "GIT_COMMITTER_NAME": "selfix-bench",
    "GIT_COMMITTER_EMAIL": "bench@selfix.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


def git(args: Sequence[str], cwd: Path | None = None, timeout: float = GIT_TIMEOUT, identity: bool = False) -> bytes:
    """git's output; InputError with its last words when it fails."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(IDENTITY if identity else {})}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=timeout, env=env, check=False)
    if proc.returncode != 0:
        raise InputError(f"git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace').strip()[-300:]}")
    return proc.stdout


def file_at(bare: Path, commit: str, path: str) -> bytes | None:
    """The bytes of ``path`` at ``commit`` (None: absent there)."""
    try:
        return git(["show", f"{commit}:{path}"], cwd=bare)
    except InputError:
        return None


def changed_paths(bare: Path, a: str, b: str) -> list[str]:
    out = git(["diff", "--name-only", "--no-renames", a, b], cwd=bare).decode()
    return [line for line in out.splitlines() if line]


def overlay(bare: Path, commit: str, paths: Iterable[str], dest: Path) -> None:
    """Make ``paths`` in ``dest`` what they are at ``commit`` (deleted where the commit has none)."""
    for rel in paths:
        target = dest / rel
        data = file_at(bare, commit, rel)
        if data is None:
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
