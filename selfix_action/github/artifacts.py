"""Safe extraction of workflow artifact zips: they are written by the failing run, so treat them as hostile.

An archive is refused as a whole (``ArtifactRefused``) when any entry is an absolute name, escapes the target
folder, is a link or a special file, or when the archive inflates past the size, count or ratio caps. Sizes
declared in the zip directory are checked first and the bytes actually written are counted again, because the
directory can lie.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from selfix_action.github.errors import ArtifactRefused

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class ExtractLimits:
    max_archive_bytes: int = 50 * 1024 * 1024
    max_total_bytes: int = 200 * 1024 * 1024
    max_file_bytes: int = 50 * 1024 * 1024
    max_entries: int = 2000
    max_ratio: float = 100.0  # uncompressed / compressed, per entry and for the whole archive


def _entry_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if not name or "\x00" in name:
        return "an empty or NUL-containing name"
    if "\\" in name:
        return f"a backslash in {name!r}"  # Windows separators would escape differently on another host
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return f"absolute name {name!r}"
    parts = PurePosixPath(name).parts
    if any(part == ".." for part in parts):
        return f"{name!r} escapes the folder"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return f"{name!r} is a symbolic link"
    # Many zip writers set permission bits only (no file type): that is a regular file.
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return f"{name!r} is a special file"
    return None


def safe_extract(archive: Path, dest: Path, limits: ExtractLimits | None = None) -> list[Path]:
    """Extract ``archive`` into ``dest`` (created); return the regular files written."""
    limits = limits or ExtractLimits()
    size = archive.stat().st_size
    if size > limits.max_archive_bytes:
        raise ArtifactRefused(f"{archive.name}: archive of {size} bytes exceeds {limits.max_archive_bytes}")
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactRefused(f"{archive.name}: not a readable zip ({exc})") from exc
    written: list[Path] = []
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_entries:
            raise ArtifactRefused(f"{archive.name}: {len(infos)} entries exceed {limits.max_entries}")
        declared_total = 0
        compressed_total = 0
        for info in infos:
            problem = _entry_problem(info)
            if problem:
                raise ArtifactRefused(f"{archive.name}: refused, it holds {problem}")
            if info.file_size > limits.max_file_bytes:
                raise ArtifactRefused(f"{archive.name}: {info.filename!r} inflates to {info.file_size} bytes")
            if info.file_size > 1024 and info.file_size > limits.max_ratio * max(info.compress_size, 1):
                raise ArtifactRefused(f"{archive.name}: {info.filename!r} has a compression ratio over the cap")
            target = (root / info.filename).resolve()
            if not target.is_relative_to(root):
                raise ArtifactRefused(f"{archive.name}: {info.filename!r} escapes the folder")
            declared_total += info.file_size
            compressed_total += info.compress_size
        if declared_total > limits.max_total_bytes:
            raise ArtifactRefused(f"{archive.name}: inflates to {declared_total} bytes in total")
        if declared_total > 1024 * 1024 and declared_total > limits.max_ratio * max(compressed_total, 1):
            raise ArtifactRefused(f"{archive.name}: whole-archive compression ratio over the cap")

        actual_total = 0
        for info in infos:
            target = (root / info.filename).resolve()
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL|O_NOFOLLOW: never write through a link or over a file an earlier entry created.
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            entry_total = 0
            with os.fdopen(fd, "wb") as out, zf.open(info) as src:
                while chunk := src.read(_CHUNK):
                    entry_total += len(chunk)
                    actual_total += len(chunk)
                    if entry_total > info.file_size or actual_total > limits.max_total_bytes:
                        raise ArtifactRefused(f"{archive.name}: {info.filename!r} inflates past its declared size")
                    out.write(chunk)
            written.append(target)
    return written
