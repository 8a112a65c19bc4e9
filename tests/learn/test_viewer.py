"""``selfix view``: a self-contained page, rendered in headless Chromium when it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from selfix_action.learn.trace_schema import read_trace
from selfix_action.learn.viewer import render_html
from tests.learn.conftest import TRACES

KEY_IDS = ("outcome", "cost", "evidence", "hypotheses", "qa", "patches", "timeline")


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def page(tmp_path: Path) -> Path:
    html = render_html(read_trace(TRACES / "scripted-age_check.trace.jsonl"))
    out = tmp_path / "view.html"
    out.write_text(html, encoding="utf-8")
    return out


def test_page_is_self_contained_and_escaped(tmp_path: Path) -> None:
    html = page(tmp_path).read_text(encoding="utf-8")
    for key in KEY_IDS:
        assert f'id="{key}"' in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html and "default-src 'none'" in html
    assert "is_adult uses &gt; so an 18-year-old" in html  # trace text is escaped
    assert "return age &gt;= ADULT_AGE" in html and "$0.0" in html


def test_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium): the browser rendering is not checked")
    target = page(tmp_path)
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,1600",
    ]
    shot = tmp_path / "view.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", target.as_uri()], capture_output=True, timeout=60)
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", target.as_uri()], capture_output=True, text=True, timeout=60
    ).stdout
    for key in KEY_IDS:
        assert f'id="{key}"' in dom, key
    assert dom.count('class="step-verify') == 2 and "healed" in dom
