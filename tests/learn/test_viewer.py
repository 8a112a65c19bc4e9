"""``selfix view``: a self-contained page, rendered in headless Chromium when it is installed. Its first screen
is the outcome, the confidence with its top reasons and the patch; the evidence and the tables come after."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.learn.trace_schema import read_trace
from selfix_action.learn.viewer import TOP_REASONS, render_html
from selfix_action.repair.report import HealReport
from tests.helpers.learning import TRACES
from tests.helpers.projects import EXAMPLES

KEY_IDS = ("outcome", "confidence", "patch", "cost", "evidence", "hypotheses", "qa", "patches", "timeline")
# The order a reader meets them in: the first screen (outcome, confidence, patch), then the details.
FIRST_SCREEN = ("outcome", "confidence", "patch")


class _Ids(HTMLParser):
    """The ids of a page's elements in document order, and the text inside each of FIRST_SCREEN's."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.text: dict[str, str] = {}
        self._open: list[tuple[str, str]] = []  # (tag, id) of the FIRST_SCREEN elements being read

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ident = dict(attrs).get("id")
        if ident:
            self.ids.append(ident)
            if ident in FIRST_SCREEN:
                self._open.append((tag, ident))
                self.text[ident] = ""

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for _, ident in self._open:
            self.text[ident] += data


def parsed(html: str) -> _Ids:
    parser = _Ids()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def healed(tmp_path_factory: pytest.TempPathFactory) -> tuple[HealReport, str]:
    """A real heal of an example whose patch is below high confidence (so reasons lower it): its report and
    the view.html it wrote."""
    repo = tmp_path_factory.mktemp("heal") / "two_modules"
    shutil.copytree(EXAMPLES / "two_modules", repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
    assert main(["fix", str(repo), "--quiet", "--test-timeout", "20"]) == 0
    out = repo / ".selfix"
    report = HealReport.model_validate_json((out / "report.json").read_text(encoding="utf-8"))
    return report, (out / "view.html").read_text(encoding="utf-8")


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


@pytest.mark.slow
def test_first_screen_is_the_outcome_the_confidence_and_the_patch(healed: tuple[HealReport, str]) -> None:
    report, html = healed
    assert report.confidence is not None and report.patch is not None
    page = parsed(html)
    order = [page.ids.index(key) for key in KEY_IDS]
    assert order == sorted(order), f"view.html's sections are in the order {page.ids}"
    assert report.stop_reason.value in page.text["outcome"] and report.explanation in page.text["outcome"]
    confidence = " ".join(page.text["confidence"].split())
    assert f"Confidence: {report.confidence.level}" in confidence
    reasons = report.confidence.reasons
    assert len(reasons) > TOP_REASONS and reasons[0].level != "high"  # a reason that lowered it, shown first
    for reason in reasons[:TOP_REASONS]:
        assert " ".join(reason.text.split()) in confidence
    assert f"{len(reasons) - TOP_REASONS} more reason(s)" in confidence
    assert page.text["patch"].strip() == report.patch.diff.strip()
    assert html.index(f"<code>{report.patch.candidate_id}</code>") < html.index('id="patch"')


def test_a_trace_without_a_patch_or_a_recorded_confidence_says_so() -> None:
    old = parsed(render_html(read_trace(TRACES / "offline-range_sum.trace.jsonl")))  # written before it was
    assert "not recorded in this trace" in old.text["confidence"]
    trace = read_trace(TRACES / "scripted-age_check.trace.jsonl")
    outcome = next(e for e in trace.events if e.step == "outcome")
    trace.events[trace.events.index(outcome)] = outcome.model_copy(update={"patch_diff": "", "healed": False})
    page = parsed(render_html(trace))
    assert page.ids.index("patch") < page.ids.index("evidence")
    assert "no patch" in page.text["confidence"] and "No patch passed verification" in page.text["patch"]


def browser_flags(tmp_path: Path) -> tuple[str, list[str]]:
    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium): the browser rendering is not checked")
    return browser, [
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


@pytest.mark.slow
def test_the_browser_shows_the_first_screen_first(tmp_path: Path, healed: tuple[HealReport, str]) -> None:
    """As Chromium builds the page of a real heal: outcome, confidence and patch before every detail."""
    browser, flags = browser_flags(tmp_path)
    report, html = healed
    target = tmp_path / "view.html"
    target.write_text(html, encoding="utf-8")
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", target.as_uri()], capture_output=True, text=True, timeout=60
    ).stdout
    page = parsed(dom)
    order = [page.ids.index(key) for key in KEY_IDS]
    assert order == sorted(order), page.ids
    assert report.confidence is not None and f"Confidence: {report.confidence.level}" in page.text["confidence"]


@pytest.mark.slow
def test_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser, flags = browser_flags(tmp_path)
    target = page(tmp_path)
    shot = tmp_path / "view.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", target.as_uri()], capture_output=True, timeout=60)
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", target.as_uri()], capture_output=True, text=True, timeout=60
    ).stdout
    for key in KEY_IDS:
        assert f'id="{key}"' in dom, key
    assert dom.count('class="step-verify') == 2 and "healed" in dom


@pytest.mark.slow
def test_the_behaviour_probe_follows_the_patch(healed: tuple[HealReport, str]) -> None:
    report, html = healed
    assert report.behaviour is not None and report.behaviour.compared > 0, report.behaviour
    page = parsed(html)
    assert page.ids.index("behaviour") > page.ids.index("patch")
    assert f"{report.behaviour.compared} input(s) replayed unpatched and patched" in html
    for change in report.behaviour.changed:
        assert escape(change.after) in html
