"""Which paths a git checkout tracks, read from its index file without running git.

Only ``sandbox/`` starts processes, and git run on a checkout reads that checkout's ``.git/config`` (hooks,
``core.fsmonitor``): reading the index file directly runs nothing. Formats 2, 3 and 4 are read (4 compresses each
path against the one before it); a split index adds the entries of its shared index (a superset of what is
tracked: removals recorded in the split part are not subtracted, so a check "is this path tracked?" errs on the
side of yes); a sparse index's directory entries end with ``/`` and stand for everything below them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_SIGNATURE = b"DIRC"
_FIXED = 62  # ctime, mtime, dev, ino, mode, uid, gid, size (4 bytes each but the times: 8), object id, flags
_EXTENDED = 0x4000
_SHA1_BYTES = 20


class UnreadableIndex(ValueError):
    """The index file is not one this reader understands (the caller decides what that means)."""


@dataclass(frozen=True)
class Checkout:
    """A git work tree: its top folder and its git directory (``.git``, or where a ``.git`` file points)."""

    root: Path
    git_dir: Path


def find_checkout(folder: Path) -> Checkout | None:
    """The git work tree ``folder`` is in (itself or an ancestor holding ``.git``), or None."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return Checkout(candidate, dot_git)
        if dot_git.is_file():  # a linked work tree or a submodule: "gitdir: <path>"
            try:
                text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = Path(text.removeprefix("gitdir:").strip())
            return Checkout(candidate, git_dir if git_dir.is_absolute() else (candidate / git_dir).resolve())
    return None


def tracked_paths(git_dir: Path) -> list[str]:
    """Every path in the index of ``git_dir`` (POSIX, relative to the work tree); [] when there is no index yet.

    Raises ``UnreadableIndex`` for an index this reader cannot parse."""
    index = git_dir / "index"
    try:
        data = index.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UnreadableIndex(f"cannot read {index}: {exc}") from exc
    paths, shared = _parse(data)
    if shared is not None:
        shared_file = git_dir / f"sharedindex.{shared}"
        try:
            paths = list(dict.fromkeys([*paths, *_parse(shared_file.read_bytes())[0]]))
        except OSError as exc:
            raise UnreadableIndex(f"cannot read the shared index {shared_file}: {exc}") from exc
    return paths


def _parse(data: bytes) -> tuple[list[str], str | None]:
    """The entries' paths and, for a split index, the id of its shared index."""
    if len(data) < 12 or data[:4] != _SIGNATURE:
        raise UnreadableIndex("not a git index file")
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        raise UnreadableIndex(f"git index version {version} is not supported")
    pos = 12
    previous = b""
    paths: list[str] = []
    try:
        for _ in range(count):
            start = pos
            flags = int.from_bytes(data[pos + 60 : pos + 62], "big")
            pos += _FIXED
            if version >= 3 and flags & _EXTENDED:
                pos += 2
            if version == 4:
                strip, pos = _varint(data, pos)
                end = data.index(b"\0", pos)
                if strip > len(previous):
                    raise UnreadableIndex("corrupt path compression")
                name = previous[: len(previous) - strip] + data[pos:end]
                pos = end + 1
            else:
                end = data.index(b"\0", pos)
                name = data[pos:end]
                pos = start + ((end - start + 8) & ~7)  # NUL-padded to a multiple of 8
            previous = name
            if name:  # a split index's entry replacing one of its shared index has no name of its own
                paths.append(name.decode("utf-8", errors="surrogateescape"))
    except ValueError as exc:  # data.index found no NUL: cut short
        raise UnreadableIndex("truncated git index") from exc
    return paths, _shared_index(data, pos)


def _shared_index(data: bytes, pos: int) -> str | None:
    """The ``link`` extension's shared index id, if the extensions after the entries hold one."""
    end = len(data) - _SHA1_BYTES  # the index's own checksum ends the file
    while pos + 8 <= end:
        signature, size = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "big")
        if signature == b"link" and size >= _SHA1_BYTES:
            return data[pos + 8 : pos + 8 + _SHA1_BYTES].hex()
        pos += 8 + size
    return None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset encoding (``decode_varint``): 7 bits a byte, each continuation adds one."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def tracked_under(paths: list[str], rel: str) -> list[str]:
    """The tracked paths at ``rel`` or below it (a sparse directory entry holding ``rel`` counts too)."""
    if rel in ("", "."):
        return list(paths)
    prefix = rel.rstrip("/") + "/"
    return [p for p in paths if p == rel or p.startswith(prefix) or (p.endswith("/") and prefix.startswith(p))]
