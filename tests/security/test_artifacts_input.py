"""Hostile artifact zips from the failing run: zip-slip and zip bombs are refused and nothing is written outside.

Runs against ``selfix_action.github.artifacts.safe_extract`` (owned by the action code); skipped with the reason
when that module is absent.
"""

from __future__ import annotations

import importlib
import stat
import zipfile
from pathlib import Path
from types import ModuleType

import pytest


def _artifacts() -> ModuleType:
    try:
        return importlib.import_module("selfix_action.github.artifacts")
    except ImportError as exc:
        pytest.skip(f"selfix_action.github.artifacts is not available: {exc}")


def _refused(module: ModuleType) -> type[Exception]:
    errors = importlib.import_module("selfix_action.github.errors")
    return errors.ArtifactRefused  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "name", ["../../outside/pwned.txt", "/tmp/selfix-zip-slip-pwned.txt", "ok/../../outside/pwned.txt"]
)
def test_zip_slip_is_refused_and_nothing_is_written_outside(name: str, tmp_path: Path) -> None:
    module = _artifacts()
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("report.xml", "<testsuite/>")
        zf.writestr(name, "pwned")
    dest = tmp_path / "deep" / "extract"
    with pytest.raises(_refused(module)):
        module.safe_extract(archive, dest)
    assert not (tmp_path / "outside").exists()
    assert not Path("/tmp/selfix-zip-slip-pwned.txt").exists()


def test_symlink_entry_is_refused(tmp_path: Path) -> None:
    module = _artifacts()
    archive = tmp_path / "a.zip"
    info = zipfile.ZipInfo("link")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(_refused(module)):
        module.safe_extract(archive, tmp_path / "x")
    assert not (tmp_path / "x" / "link").exists()


def test_zip_bomb_is_refused_by_ratio_before_inflating(tmp_path: Path) -> None:
    module = _artifacts()
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("report.xml", b"\0" * (16 * 1024 * 1024))  # 16 MiB of zeros, ~16 KiB compressed
    assert archive.stat().st_size < 1024 * 1024
    with pytest.raises(_refused(module)):
        module.safe_extract(archive, tmp_path / "x")
    written = sum(p.stat().st_size for p in (tmp_path / "x").rglob("*") if p.is_file())
    assert written == 0
