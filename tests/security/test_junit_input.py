"""Hostile JUnit XML from a CI artifact: refused quickly with a bounded cost, and the other reports still count.

``parse_reports`` is the boundary the action uses on downloaded artifacts (``selfix_action.junit``).
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from selfix_action.junit import parse_reports

GOOD = """<?xml version="1.0"?>
<testsuite name="s" tests="1"><testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py"/></testsuite>
"""

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuite name="s"><testcase classname="c" name="n"><failure message="&lol9;"/></testcase></testsuite>
"""


def _xxe(secret: Path) -> str:
    return f"""<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY x SYSTEM "file://{secret}">]>
<testsuite name="s"><testcase classname="c" name="n"><failure message="&x;"/></testcase></testsuite>
"""


QUADRATIC = (
    '<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY a "'
    + "A" * 100_000
    + '">]>\n<testsuite name="s"><testcase classname="c" name="n"><failure message="'
    + "&a;" * 20_000
    + '"/></testcase></testsuite>\n'
)
DEEP = '<?xml version="1.0"?>\n<testsuite name="s">' + "<x>" * 100_000 + "</x>" * 100_000 + "</testsuite>\n"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("billion_laughs", "refused: XML entities/DTD are not allowed"),
        ("quadratic_blowup", "refused: XML entities/DTD are not allowed"),
        ("xxe_secret_file", "refused: XML entities/DTD are not allowed"),
        ("deep_nesting", "refused: XML nesting deeper than 100 levels"),
    ],
)
def test_hostile_junit_is_refused_and_the_rest_is_read(name: str, reason: str, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("ghs_selfixFAKExxeTOKEN")
    texts = {
        "billion_laughs": BILLION_LAUGHS,
        "quadratic_blowup": QUADRATIC,
        "xxe_secret_file": _xxe(secret),
        "deep_nesting": DEEP,
    }
    hostile = tmp_path / f"{name}.xml"
    hostile.write_text(texts[name])
    good = tmp_path / "good.xml"
    good.write_text(GOOD)
    started = time.monotonic()
    tracemalloc.start()
    try:
        report = parse_reports([hostile, good])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 10
    assert peak < 200 * 1024**2
    assert [(e.path, e.reason) for e in report.errors] == [(str(hostile), reason)]
    assert [c.name for c in report.cases] == ["test_ok"]  # the run went on with the good report
    assert "ghs_selfixFAKExxeTOKEN" not in repr(report)


def test_oversized_junit_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.xml"
    big.write_text(GOOD.replace("</testsuite>", "<!--" + "x" * 2_000_000 + "--></testsuite>"))
    good = tmp_path / "good.xml"
    good.write_text(GOOD)
    report = parse_reports([big, good], max_bytes=1024**2)
    assert len(report.errors) == 1 and report.errors[0].reason.startswith("refused: file is larger than")
    assert [c.name for c in report.cases] == ["test_ok"]
