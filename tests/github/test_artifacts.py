"""Artifact zips are hostile input: traversal, absolute names, links and bombs are refused."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from selfix_action.github.artifacts import ExtractLimits, safe_extract
from selfix_action.github.errors import ArtifactRefused


def make_zip(path: Path, entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return path


def test_extracts_regular_files(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", [("reports/junit.xml", b"<testsuite/>")])
    files = safe_extract(archive, tmp_path / "out")
    assert [f.relative_to(tmp_path / "out").as_posix() for f in files] == ["reports/junit.xml"]


@pytest.mark.parametrize("name", ["../evil.xml", "a/../../evil.xml", "/etc/evil.xml", "C:/evil.xml", "a\\..\\evil"])
def test_refuses_escaping_and_absolute_names(tmp_path: Path, name: str) -> None:
    archive = make_zip(tmp_path / "a.zip", [("ok.xml", b"x"), (name, b"x")])
    with pytest.raises(ArtifactRefused):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "evil.xml").exists()


def test_refuses_symlinks(tmp_path: Path) -> None:
    info = zipfile.ZipInfo("link.xml")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive = make_zip(tmp_path / "a.zip", [(info, b"/etc/passwd")])
    with pytest.raises(ArtifactRefused, match="symbolic link"):
        safe_extract(archive, tmp_path / "out")


def test_refuses_ratio_bomb(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", [("bomb.xml", b"\0" * (5 * 1024 * 1024))])
    with pytest.raises(ArtifactRefused, match="ratio"):
        safe_extract(archive, tmp_path / "out")


def test_refuses_size_bomb(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", [(f"f{i}.xml", bytes(range(256)) * 64) for i in range(4)])
    with pytest.raises(ArtifactRefused):
        safe_extract(archive, tmp_path / "out", ExtractLimits(max_total_bytes=40_000))


def test_refuses_non_zip(tmp_path: Path) -> None:
    (tmp_path / "a.zip").write_bytes(b"not a zip")
    with pytest.raises(ArtifactRefused):
        safe_extract(tmp_path / "a.zip", tmp_path / "out")
