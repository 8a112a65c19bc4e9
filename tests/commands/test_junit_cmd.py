from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

from selfix_action.commands.junit_cmd import run_junit

FIXTURES = Path(__file__).parent.parent / "fixtures" / "junit"

CASE_KEYS = {
    "report",
    "classname",
    "name",
    "file",
    "line",
    "nodeid",
    "outcome",
    "duration",
    "message",
    "text",
    "runs",
    "flaky",
    "suites",
}


def fixture(name: str) -> str:
    return str(FIXTURES / name)


def run(paths: list[str], as_json: bool = False) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    code = run_junit(paths, as_json, out, err)
    return code, out.getvalue(), err.getvalue()


def test_human_output() -> None:
    code, out, err = run([fixture("pytest_xunit1.xml")])
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert "PASSED  tests/test_calc.py::test_add  (0.001s)  tests/test_calc.py:4" in lines
    failed = lines.index("FAILED  tests/test_calc.py::test_divide  (0.012s)  tests/test_calc.py:7")
    assert lines[failed + 1 : failed + 5] == [
        "    AssertionError: assert 0.5 == 2",
        "     +  where 0.5 = divide(1, 2)",
        "      def test_divide():",
        "      >       assert divide(1, 2) == 2",
    ]
    assert "ERROR   tests/test_imports.py  (0.000s)  tests/test_imports.py" in lines
    skipped = lines.index("SKIPPED tests/test_calc.py::test_later  (0.000s)  tests/test_calc.py:14")
    assert lines[skipped + 1] == "    not implemented yet"
    # A passed case is one line: the next line starts a new case.
    passed = lines.index("PASSED  tests/test_calc.py::test_scale[1.5]  (0.000s)  tests/test_calc.py:18")
    assert lines[passed + 1].startswith("PASSED  tests/test_calc.py::test_scale[x.y-z]")
    assert lines[-1] == "4 passed, 1 failed, 2 errors, 2 skipped in 1 file"


def test_human_output_without_node_ids() -> None:
    code, out, _ = run([fixture("go_junit_report.xml"), fixture("jest_junit.xml")])
    assert code == 0
    lines = out.splitlines()
    assert "FAILED  github.com/acme/widgets/store::TestGet/missing_key  (0.002s)" in lines
    assert "FAILED  sum handles negatives  (0.004s)" in lines
    assert lines[-1] == "4 passed, 2 failed, 0 errors, 2 skipped in 2 files"


def test_long_tracebacks_are_truncated(tmp_path: Path) -> None:
    body = "\n".join(f"frame {i}" for i in range(50))
    path = tmp_path / "long.xml"
    path.write_text(
        '<testsuite><testcase classname="tests.test_x" name="test_y">'
        f'<failure message="m">{body}</failure></testcase></testsuite>'
    )
    code, out, _ = run([str(path)])
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "FAILED  tests/test_x.py::test_y"
    assert lines[1] == "    m"
    assert lines[2:22] == [f"      frame {i}" for i in range(20)]
    assert lines[22] == "      ... (30 more lines)"
    assert lines[23] == "0 passed, 1 failed, 0 errors, 0 skipped in 1 file"


def test_json_output() -> None:
    code, out, err = run([fixture("pytest_xunit1.xml"), fixture("TEST-com.example.CalculatorTest.xml")], as_json=True)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert set(data) == {"cases", "errors"}
    assert data["errors"] == []
    assert len(data["cases"]) == 15
    assert all(set(case) == CASE_KEYS for case in data["cases"])
    divide = next(c for c in data["cases"] if c["name"] == "test_divide")
    assert divide == {
        "report": fixture("pytest_xunit1.xml"),
        "classname": "tests.test_calc",
        "name": "test_divide",
        "file": "tests/test_calc.py",
        "line": 7,
        "nodeid": "tests/test_calc.py::test_divide",
        "outcome": "failed",
        "duration": 0.012,
        "message": "AssertionError: assert 0.5 == 2\n +  where 0.5 = divide(1, 2)",
        "text": divide["text"],
        "runs": ["failed"],
        "flaky": False,
        "suites": ["pytest"],
    }
    assert divide["text"].endswith("tests/test_calc.py:9: AssertionError")
    java = next(c for c in data["cases"] if c["name"] == "dividesByZero")
    assert (java["outcome"], java["nodeid"], java["file"], java["line"]) == ("error", None, None, None)


def test_good_file_still_parses_next_to_bad_ones() -> None:
    paths = [fixture("malformed.xml"), fixture("bare_testsuite.xml"), fixture("missing.xml")]
    code, out, err = run(paths)
    assert code == 2
    assert err.splitlines() == [
        f"selfix: error: {fixture('malformed.xml')}: malformed XML: truncated, file ends inside an element "
        "(line 3, column 0)",
        f"selfix: error: {fixture('missing.xml')}: no such file",
    ]
    assert out.splitlines() == [
        "PASSED  smoke::ping  (0.100s)",
        "PASSED  smoke::health  (0.200s)",
        "2 passed, 0 failed, 0 errors, 0 skipped in 1 file",
    ]


def test_json_output_with_bad_files() -> None:
    code, out, err = run([fixture("not_junit.xml"), fixture("bare_testsuite.xml")], as_json=True)
    assert code == 2
    reason = "not a JUnit report: root element is <html>, not <testsuites> or <testsuite>"
    assert err == f"selfix: error: {fixture('not_junit.xml')}: {reason}\n"
    data = json.loads(out)
    assert data["errors"] == [{"path": fixture("not_junit.xml"), "reason": reason}]
    assert [c["name"] for c in data["cases"]] == ["ping", "health"]


def test_hostile_files_are_reported_and_nothing_leaks() -> None:
    passwd = Path("/etc/passwd")
    secret = passwd.read_text().splitlines()[0] if passwd.exists() else "root:x:0:0"
    for as_json in (False, True):
        code, out, err = run([fixture("xxe_passwd.xml"), fixture("billion_laughs.xml")], as_json=as_json)
        assert code == 2
        assert err.splitlines() == [
            f"selfix: error: {fixture('xxe_passwd.xml')}: refused: XML entities/DTD are not allowed",
            f"selfix: error: {fixture('billion_laughs.xml')}: refused: XML entities/DTD are not allowed",
        ]
        assert secret not in out + err
        assert "lollol" not in out + err


def test_only_bad_files() -> None:
    code, out, err = run([fixture("empty.xml")])
    assert code == 2
    assert err == f"selfix: error: {fixture('empty.xml')}: empty file\n"
    assert out == "0 passed, 0 failed, 0 errors, 0 skipped in 0 files\n"


def test_no_paths() -> None:
    code, out, err = run([])
    assert (code, out) == (2, "")
    assert err == "selfix: error: no JUnit report given\n"


def test_counts_are_runs_as_the_file_records_them(tmp_path: Path) -> None:
    """A retried case counts once per run, nameless cases each count: the totals equal the <testcase> elements."""
    path = tmp_path / "mocha.xml"
    path.write_text(
        '<testsuites><testsuite name="api">'
        '<testcase classname="api" name="retries then passes"><failure message="timeout"/></testcase>'
        '<testcase classname="api" name="retries then passes"/>'
        '<testcase classname="api" name="stable"/>'
        '<testcase classname="api" name=""><failure message="anonymous one"/></testcase>'
        '<testcase classname="api" name=""/>'
        "</testsuite></testsuites>"
    )
    code, out, _ = run([str(path)])
    assert code == 0
    lines = out.splitlines()
    assert "FAILED  api::retries then passes  [2 runs: failed, passed; flaky]" in lines
    assert lines[-1] == "3 passed, 2 failed, 0 errors, 0 skipped in 1 file (1 case ran more than once, 1 flaky)"
