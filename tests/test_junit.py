from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pydantic
import pytest

from selfix_action.errors import ExitCode, JUnitError
from selfix_action.junit import (
    DEFAULT_MAX_BYTES,
    JUnitReport,
    Outcome,
    ReportError,
    TestCaseResult,
    parse_report,
    parse_reports,
    pytest_nodeid,
)

FIXTURES = Path(__file__).parent / "fixtures" / "junit"

P, F, E, S = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED


def fixture(name: str) -> str:
    return str(FIXTURES / name)


def by_name(cases: list[TestCaseResult]) -> dict[str, TestCaseResult]:
    return {case.name: case for case in cases}


# --------------------------------------------------------------------------------------------------------
# Shapes of each tool


def test_pytest_xunit1() -> None:
    cases = parse_report(fixture("pytest_xunit1.xml"))
    assert [(c.nodeid, c.outcome) for c in cases] == [
        ("tests/test_imports.py", E),
        ("tests/test_calc.py::test_add", P),
        ("tests/test_calc.py::test_divide", F),
        ("tests/test_calc.py::test_with_db", E),
        ("tests/test_calc.py::test_later", S),
        ("tests/test_calc.py::test_scale[1.5]", P),
        ("tests/test_calc.py::test_scale[x.y-z]", P),
        ("tests/test_calc.py::TestParser::test_parse", P),
        ("tests/test_calc.py::TestParser::TestNested::test_xfail", S),
    ]
    cases_by_name = by_name(cases)
    divide = cases_by_name["test_divide"]
    assert divide.report == fixture("pytest_xunit1.xml")
    assert divide.classname == "tests.test_calc"
    assert divide.file == "tests/test_calc.py"
    assert divide.line == 7  # as written: pytest's line numbers are 0-based
    assert divide.duration == pytest.approx(0.012)
    assert divide.message == "AssertionError: assert 0.5 == 2\n +  where 0.5 = divide(1, 2)"
    assert divide.text.startswith("def test_divide():\n>       assert divide(1, 2) == 2")
    assert divide.text.endswith("tests/test_calc.py:9: AssertionError")

    assert cases_by_name["test_with_db"].message == 'failed on setup with "RuntimeError: no database"'
    skipped = cases_by_name["test_later"]
    assert (skipped.message, skipped.text) == ("not implemented yet", "")
    # system-out is not part of the text
    assert cases_by_name["test_parse"].text == ""
    collection = cases_by_name["tests.test_imports"]
    assert (collection.classname, collection.line, collection.message) == ("", None, "collection failure")
    assert "No module named 'missing_dependency'" in collection.text


def test_pytest_xunit2_has_no_file_and_merges_teardown_error() -> None:
    cases = parse_report(fixture("pytest_xunit2.xml"))
    assert [(c.nodeid, c.outcome) for c in cases] == [
        ("tests/unit/test_calc.py::test_add", P),
        ("tests/unit/test_calc.py::test_divide", F),
        ("tests/unit/test_calc.py::test_fail_then_teardown", E),
        ("tests/unit/test_calc.py::test_scale[1.5-3.0]", P),
        ("tests/unit/test_calc.py::TestParser::test_skip_windows", S),
        ("tests/unit/parser_test.py::TestTokens::test_tokens[a b]", P),
    ]
    assert all(c.file is None and c.line is None for c in cases)
    merged = by_name(cases)["test_fail_then_teardown"]
    assert merged.message == 'failed on teardown with "OSError: resource busy"'
    assert "E       assert False" in merged.text
    assert "E       OSError: resource busy" in merged.text
    assert merged.text.index("assert False") < merged.text.index("OSError")
    assert merged.duration == pytest.approx(0.003)


def test_unittest_xml_reporting() -> None:
    cases = parse_report(fixture("unittest_xml_reporting.xml"))
    assert [(c.nodeid, c.outcome, c.line) for c in cases] == [
        ("tests/test_shop.py::CartTest::test_empty", P, 8),
        ("tests/test_shop.py::CartTest::test_total", F, 12),
        ("tests/test_shop.py::CartTest::test_discount", E, 18),
        ("tests/test_shop.py::CartTest::test_currency", S, 23),
    ]
    total = by_name(cases)["test_total"]
    assert total.message == "30 != 25"
    assert total.text.startswith("Traceback (most recent call last):")
    assert total.text.endswith("AssertionError: 30 != 25")
    assert "adding 2 items" not in total.text
    assert by_name(cases)["test_currency"].message == "currency support pending"


def test_jest_junit() -> None:
    cases = parse_report(fixture("jest_junit.xml"))
    assert [(c.name, c.outcome, c.nodeid) for c in cases] == [
        ("sum adds 1 + 2 to equal 3", P, None),
        ("sum handles negatives", F, None),
        ("sum works with floats", S, None),
        ("App renders the header", P, None),
    ]
    failed = by_name(cases)["sum handles negatives"]
    assert failed.message == ""
    assert failed.text.startswith("Error: expect(received).toBe(expected)")
    assert by_name(cases)["sum works with floats"].duration == 0.0


def test_maven_surefire() -> None:
    cases = parse_report(fixture("TEST-com.example.CalculatorTest.xml"))
    assert [(c.name, c.outcome) for c in cases] == [
        ("addsTwoNumbers", P),
        ("dividesByZero", E),
        ("multiplies", F),
        ("roundsHalfUp", S),
        ("usesNetwork", F),  # flaky: failed once, passed on rerun; a failed run counts
        ("alwaysBroken", F),  # failure + rerunFailure children
    ]
    assert [(c.name, c.runs, c.flaky) for c in cases if len(c.runs) > 1] == [
        ("usesNetwork", (F, P), True),
        ("alwaysBroken", (F, F, F), False),
    ]
    assert all(c.classname == "com.example.CalculatorTest" and c.nodeid is None for c in cases)
    cases_by_name = by_name(cases)
    assert cases_by_name["multiplies"].message == "expected: <12> but was: <7>"
    assert "multiplying 3 and 4" not in cases_by_name["multiplies"].text
    assert cases_by_name["dividesByZero"].text.startswith("java.lang.NullPointerException")
    assert cases_by_name["usesNetwork"].message == "Connection refused"
    assert cases_by_name["usesNetwork"].text.startswith("java.net.ConnectException: Connection refused")
    assert cases_by_name["alwaysBroken"].text.count("java.lang.AssertionError: boom") == 1


def test_go_junit_report() -> None:
    cases = parse_report(fixture("go_junit_report.xml"))
    assert [(c.classname, c.name, c.outcome, c.nodeid) for c in cases] == [
        ("github.com/acme/widgets/store", "TestPut", P, None),
        ("github.com/acme/widgets/store", "TestGet/missing_key", F, None),
        ("github.com/acme/widgets/store", "TestSlow", S, None),
        ("github.com/acme/widgets/cmd", "TestMain", P, None),
    ]
    failed = cases[1]
    assert failed.message == "Failed"
    assert failed.text == '    store_test.go:42: Get("nope") = "x", want ""'


def test_nested_testsuites() -> None:
    cases = parse_report(fixture("nested_suites.xml"))
    assert [(c.classname, c.name, c.outcome, c.duration) for c in cases] == [
        ("integration", "boots", P, 0.5),
        ("integration.api.UsersSpec", "lists users", P, 0.25),
        ("integration.api.auth.LoginSpec", "rejects bad password", F, 0.125),
    ]


def test_bare_testsuite_root() -> None:
    cases = parse_report(Path(fixture("bare_testsuite.xml")))
    assert [(c.classname, c.name, c.outcome) for c in cases] == [("smoke", "ping", P), ("smoke", "health", P)]
    assert cases[0].report == fixture("bare_testsuite.xml")


def test_testsuites_inside_testsuites(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(
        '<testsuites><testsuites><testsuite name="a"><testcase classname="a" name="x"/></testsuite>'
        '</testsuites><testsuite name="b"><testcase classname="b" name="y"><error/></testcase></testsuite>'
        "</testsuites>"
    )
    assert {(c.name, c.outcome) for c in parse_report(path)} == {("x", P), ("y", E)}


def test_multiple_results_precedence_and_joined_text() -> None:
    cases = by_name(parse_report(fixture("multiple_results.xml")))
    two = cases["test_two_failures"]
    assert (two.outcome, two.message, two.text) == (F, "first failure", "first body\n\nsecond body")
    mixed = cases["test_failure_then_error"]
    assert (mixed.outcome, mixed.message, mixed.text) == (E, "it errored", "failure body\n\nerror body")
    skipped_and_failed = cases["test_skipped_and_failed"]
    assert (skipped_and_failed.outcome, skipped_and_failed.message) == (F, "late failure")
    only_skipped = cases["test_only_skipped"]
    assert (only_skipped.outcome, only_skipped.text) == (S, "")
    assert only_skipped.duration is None  # time="not-a-number" does not break the report


def test_missing_attributes_default_sensibly(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text('<testsuite><testcase name="lonely" line="x"/><testcase/></testsuite>')
    lonely, nameless = parse_report(path)
    assert (lonely.classname, lonely.file, lonely.line, lonely.duration) == ("", None, None, None)
    assert (lonely.nodeid, lonely.message, lonely.text) == (None, "", "")
    assert (nameless.name, nameless.outcome) == ("", P)


def test_windows_file_attribute_is_made_posix(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(
        '<testsuite><testcase classname="tests.test_x.TestK" name="test_y" file="tests\\test_x.py" line="3"/>'
        "</testsuite>"
    )
    (case,) = parse_report(path)
    assert (case.file, case.nodeid) == ("tests/test_x.py", "tests/test_x.py::TestK::test_y")


# --------------------------------------------------------------------------------------------------------
# Hostile, broken and non-JUnit files


def refusal(path: str | Path, **kwargs: int) -> tuple[JUnitError, float]:
    start = time.monotonic()
    with pytest.raises(JUnitError) as info:
        parse_report(path, **kwargs)
    return info.value, time.monotonic() - start


def test_billion_laughs_is_refused_quickly() -> None:
    exc, elapsed = refusal(fixture("billion_laughs.xml"))
    assert exc.reason == "refused: XML entities/DTD are not allowed"
    assert exc.path == fixture("billion_laughs.xml")
    assert exc.exit_code == ExitCode.BAD_INPUT
    assert "lol" not in exc.reason
    assert elapsed < 5


@pytest.mark.parametrize("name", ["xxe_passwd.xml", "external_dtd.xml"])
def test_external_entities_and_dtds_are_refused_without_reading_them(name: str) -> None:
    exc, elapsed = refusal(fixture(name))
    assert exc.reason == "refused: XML entities/DTD are not allowed"
    assert "root:" not in str(exc)
    passwd = Path("/etc/passwd")
    if passwd.exists():
        first_line = passwd.read_text().splitlines()[0]
        assert first_line not in str(exc)
    assert elapsed < 5


def test_internal_dtd_without_entities_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text('<!DOCTYPE testsuite><testsuite><testcase classname="a" name="b"/></testsuite>')
    assert refusal(path)[0].reason == "refused: XML entities/DTD are not allowed"


def nested(depth: int) -> str:
    # <testsuites><testsuite><testsuite>... with a test case at the bottom; `depth` elements in total.
    suites = depth - 2
    return (
        "<testsuites>"
        + "<testsuite>" * suites
        + '<testcase classname="deep" name="bottom"/>'
        + "</testsuite>" * suites
        + "</testsuites>"
    )


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    ok = tmp_path / "ok.xml"
    ok.write_text(nested(100))
    assert [c.name for c in parse_report(ok)] == ["bottom"]

    deep = tmp_path / "deep.xml"
    deep.write_text(nested(101))
    assert refusal(deep)[0].reason == "refused: XML nesting deeper than 100 levels"

    very_deep = tmp_path / "very_deep.xml"
    very_deep.write_text("<testsuites>" + "<a>" * 200_000 + "</a>" * 200_000 + "</testsuites>")
    exc, elapsed = refusal(very_deep)
    assert exc.reason == "refused: XML nesting deeper than 100 levels"
    assert elapsed < 5


def test_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text('<testsuite><testcase classname="a" name="b"/></testsuite>')
    assert len(parse_report(path, max_bytes=path.stat().st_size)) == 1
    exc, _ = refusal(path, max_bytes=10)
    assert exc.reason.startswith("refused: file is larger than")

    # The default cap, on a sparse file: refused from its size alone, without reading it.
    huge = tmp_path / "huge.xml"
    with huge.open("wb") as fh:
        fh.truncate(DEFAULT_MAX_BYTES + 1)
    exc, elapsed = refusal(huge)
    assert exc.reason == f"refused: file is larger than 50 MiB ({DEFAULT_MAX_BYTES + 1} bytes)"
    assert elapsed < 5


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("empty.xml", "empty file"),
        ("declaration_only.xml", "empty report: no XML element found"),
        ("malformed.xml", "malformed XML: truncated, file ends inside an element (line 3, column 0)"),
        ("undeclared_entity.xml", "malformed XML: undefined entity: line 2, column 90"),
        ("not_junit.xml", "not a JUnit report: root element is <html>, not <testsuites> or <testsuite>"),
        (
            "coverage_not_junit.xml",
            "not a JUnit report: root element is <coverage>, not <testsuites> or <testsuite>",
        ),
        ("does_not_exist.xml", "no such file"),
    ],
)
def test_unreadable_files_give_a_one_line_reason(name: str, reason: str) -> None:
    exc, _ = refusal(fixture(name))
    assert exc.reason == reason
    assert str(exc) == f"{fixture(name)}: {reason}"
    assert "\n" not in str(exc)


def test_other_unreadable_paths(tmp_path: Path) -> None:
    assert refusal(tmp_path)[0].reason == "is a directory"
    garbage = tmp_path / "garbage.xml"
    garbage.write_bytes(b"\x00\x01binary\xff")
    assert refusal(garbage)[0].reason.startswith("malformed XML: ")
    text = tmp_path / "log.txt"
    text.write_text("FAILED tests/test_x.py::test_y - assert 1 == 2\n")
    assert refusal(text)[0].reason.startswith("malformed XML: syntax error")


def test_parse_reports_collects_errors_and_keeps_going() -> None:
    paths = [
        fixture("malformed.xml"),
        fixture("bare_testsuite.xml"),
        fixture("nope.xml"),
        fixture("go_junit_report.xml"),
    ]
    report = parse_reports(paths)
    assert isinstance(report, JUnitReport)
    assert [c.name for c in report.cases] == [
        "ping",
        "health",
        "TestPut",
        "TestGet/missing_key",
        "TestSlow",
        "TestMain",
    ]
    assert report.errors == [
        ReportError(
            path=fixture("malformed.xml"),
            reason="malformed XML: truncated, file ends inside an element (line 3, column 0)",
        ),
        ReportError(path=fixture("nope.xml"), reason="no such file"),
    ]
    assert parse_reports([]) == JUnitReport(cases=[], errors=[])


def test_models_are_frozen_and_round_trip_through_json() -> None:
    report = parse_reports([fixture("pytest_xunit1.xml")])
    with pytest.raises(pydantic.ValidationError):
        report.cases[0].outcome = Outcome.PASSED  # type: ignore[misc]
    assert JUnitReport.model_validate_json(report.model_dump_json()) == report
    assert report.cases[0].model_dump(mode="json")["outcome"] == "error"


# --------------------------------------------------------------------------------------------------------
# pytest node ids


@pytest.mark.parametrize(
    ("classname", "name", "file", "nodeid"),
    [
        ("tests.test_x.TestK", "test_y[p]", "tests/test_x.py", "tests/test_x.py::TestK::test_y[p]"),
        ("tests.test_x.TestK", "test_y[p]", None, "tests/test_x.py::TestK::test_y[p]"),
        ("tests.test_x", "test_y[1.5]", None, "tests/test_x.py::test_y[1.5]"),
        ("tests.test_x", "test_y[a.b::c]", "tests/test_x.py", "tests/test_x.py::test_y[a.b::c]"),
        ("test_x", "test_y", None, "test_x.py::test_y"),
        ("pkg.sub.x_test.TestA.TestB", "test_c", None, "pkg/sub/x_test.py::TestA::TestB::test_c"),
        # The longest module-looking prefix wins: test_pkg is a package, test_mod the module.
        ("tests.test_pkg.test_mod.TestK", "test_y", None, "tests/test_pkg/test_mod.py::TestK::test_y"),
        # With the file attribute, the module need not look like a test module at all.
        (
            "src.checks.check_x.TestK",
            "test_y",
            "src/checks/check_x.py",
            "src/checks/check_x.py::TestK::test_y",
        ),
        ("src.checks.check_x.TestK", "test_y", None, None),
        # Dots in directory names are only recoverable with the file attribute.
        ("tests.v1.2.test_x", "test_y", "tests/v1.2/test_x.py", "tests/v1.2/test_x.py::test_y"),
        ("tests.test_x", "test_y", "tests\\test_x.py", "tests/test_x.py::test_y"),
        # Non-Python items, e.g. a YAML test file collected by a plugin.
        ("tests.test_api.yaml", "get users", "tests/test_api.yaml", "tests/test_api.yaml::get users"),
        # Doctests: the name is the dotted object path.
        ("pkg.mod", "pkg.mod.func", "pkg/mod.py", "pkg/mod.py::pkg.mod.func"),
        # A file that does not match the classname (absolute path): fall back on the classname.
        ("tests.test_x.K", "test_y", "/abs/tests/test_x.py", "tests/test_x.py::K::test_y"),
        # A module that failed to collect.
        ("", "tests.test_broken", "tests/test_broken.py", "tests/test_broken.py"),
        ("", "tests.test_broken", None, "tests/test_broken.py"),
        ("", "something_else", "tests/test_broken.py", None),
        ("", "test_y[1.5]", None, None),
        # Not pytest.
        ("com.example.FooTest", "testBar", None, None),
        ("com.example.test_utils.Foo Bar", "testBar", None, None),
        ("sum adds 1 + 2 to equal 3", "sum adds 1 + 2 to equal 3", None, None),
        ("github.com/acme/widgets/store", "TestGet/missing_key", None, None),
        ("example.com/x/y_test", "TestZ", None, None),
        ("main", "TestZ", None, None),
        ("tests..test_x", "test_y", None, None),
        ("tests.test_x.Test-K", "test_y", None, None),
        ("tests.test_x", "", None, None),
    ],
)
def test_pytest_nodeid(classname: str, name: str, file: str | None, nodeid: str | None) -> None:
    assert pytest_nodeid(classname, name, file) == nodeid


# --------------------------------------------------------------------------------------------------------
# The real thing: pytest's own reports

SAMPLE_TESTS = """
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture boom")


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown boom")


def test_pass():
    assert True


def test_fail():
    assert 1 == 2, "one is not two"


def test_fixture_error(broken):
    pass


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


@pytest.mark.parametrize("x", [1.5, "a.b", "c::d"])
def test_param(x):
    assert x != "a.b"


def test_fail_then_teardown_error(bad_teardown):
    assert False


class TestK:
    def test_in_class(self):
        pass

    class TestInner:
        def test_inner(self):
            assert 0
"""

EXPECTED = {
    "tests/test_broken.py": E,
    "tests/test_sample.py::test_pass": P,
    "tests/test_sample.py::test_fail": F,
    "tests/test_sample.py::test_fixture_error": E,
    "tests/test_sample.py::test_skip": S,
    "tests/test_sample.py::test_param[1.5]": P,
    "tests/test_sample.py::test_param[a.b]": F,
    "tests/test_sample.py::test_param[c::d]": P,
    "tests/test_sample.py::test_fail_then_teardown_error": E,
    "tests/test_sample.py::TestK::test_in_class": P,
    "tests/test_sample.py::TestK::TestInner::test_inner": F,
}


def _pytest_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture(scope="module")
def real_pytest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("real_pytest")
    project = root / "tmp_project"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")  # pins the rootdir, so node ids are relative to it
    (project / "tests" / "test_sample.py").write_text(SAMPLE_TESTS)
    (project / "tests" / "test_broken.py").write_text("import module_that_does_not_exist_xyz\n")

    common = ["-p", "no:cacheprovider", "--continue-on-collection-errors"]
    xunit1, xunit2 = root / "xunit1.xml", root / "xunit2.xml"
    commands = {
        "xunit1": [f"--junitxml={xunit1}", "-o", "junit_family=xunit1"],
        "xunit2": [f"--junitxml={xunit2}", "-o", "junit_family=xunit2"],
        "collect": ["--collect-only", "-q"],
    }
    procs = {
        key: subprocess.Popen(
            [sys.executable, "-m", "pytest", str(project), *common, *args],
            cwd=project,
            env=_pytest_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for key, args in commands.items()
    }
    outputs = {key: proc.communicate(timeout=120)[0] for key, proc in procs.items()}
    assert procs["xunit1"].returncode == 1, outputs["xunit1"]
    assert procs["xunit2"].returncode == 1, outputs["xunit2"]
    return {
        "xunit1": xunit1,
        "xunit2": xunit2,
        "collected": outputs["collect"],
        "source": (project / "tests" / "test_sample.py").read_text(),
    }


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_real_pytest_report_outcomes_and_node_ids(real_pytest: dict[str, object], family: str) -> None:
    cases = parse_report(str(real_pytest[family]))
    assert {c.nodeid: c.outcome for c in cases} == EXPECTED
    assert len(cases) == len(EXPECTED)  # the teardown error was merged into its test case

    # The node ids are exactly the ones pytest itself prints.
    collected = str(real_pytest["collected"])
    collected_ids = {line for line in collected.splitlines() if "::" in line}
    assert {c.nodeid for c in cases if c.nodeid and "::" in c.nodeid} == collected_ids
    assert "ERROR tests/test_broken.py" in collected

    by_id = {c.nodeid: c for c in cases}
    fail = by_id["tests/test_sample.py::test_fail"]
    assert fail.message == "AssertionError: one is not two\nassert 1 == 2"
    assert "E       AssertionError: one is not two" in fail.text
    fixture_error = by_id["tests/test_sample.py::test_fixture_error"]
    assert fixture_error.message == 'failed on setup with "RuntimeError: fixture boom"'
    assert by_id["tests/test_sample.py::test_skip"].message == "not today"
    merged = by_id["tests/test_sample.py::test_fail_then_teardown_error"]
    assert "assert False" in merged.text and "teardown boom" in merged.text
    assert "module_that_does_not_exist_xyz" in by_id["tests/test_broken.py"].text
    assert all(c.duration is not None for c in cases)

    if family == "xunit1":
        source_lines = str(real_pytest["source"]).splitlines()
        def_line = source_lines.index("def test_pass():") + 1  # 1-based
        test_pass = by_id["tests/test_sample.py::test_pass"]
        assert (test_pass.file, test_pass.line) == ("tests/test_sample.py", def_line - 1)
        assert by_id["tests/test_broken.py"].file == "tests/test_broken.py"
    else:
        assert all(c.file is None and c.line is None for c in cases)


def test_real_pytest_collect_output_is_what_we_expect(real_pytest: dict[str, object]) -> None:
    # Guards the test above against comparing two empty sets.
    collected_ids = [line for line in str(real_pytest["collected"]).splitlines() if "::" in line]
    assert len(collected_ids) == 10
    assert re.search(r"^tests/test_sample.py::test_param\[c::d\]$", str(real_pytest["collected"]), re.M)


def test_repeated_cases_keep_every_run(tmp_path: Path) -> None:
    """mocha retries, go test -count=3, parametrized suites that repeat names: no run disappears."""
    path = tmp_path / "repeated.xml"
    path.write_text(
        '<testsuite name="s">'
        '<testcase classname="tests.test_a" name="test_x" file="tests/test_a.py" time="0.5"/>'
        '<testcase classname="tests.test_a" name="test_x" file="tests/test_a.py" time="0.25">'
        '<failure message="second run failed">boom</failure></testcase>'
        '<testcase classname="tests.test_a" name="test_x" file="tests/test_a.py" time="0.25"/>'
        '<testcase classname="tests.test_a" name="test_y" file="tests/test_a.py"/>'
        '<testcase classname="tests.test_a" name="test_y" file="tests/test_a.py"/>'
        "</testsuite>"
    )
    cases = parse_report(path)
    assert [(c.nodeid, c.outcome, c.runs, c.flaky) for c in cases] == [
        ("tests/test_a.py::test_x", F, (P, F, P), True),
        ("tests/test_a.py::test_y", P, (P, P), False),
    ]
    assert cases[0].message == "second run failed"
    assert cases[0].duration == pytest.approx(1.0)


def test_unnamed_cases_are_each_counted(tmp_path: Path) -> None:
    path = tmp_path / "unnamed.xml"
    path.write_text(
        '<testsuite name="s"><testcase classname="k"/><testcase classname="k"><error message="e"/></testcase>'
        '<testcase classname="k" name=""/></testsuite>'
    )
    cases = parse_report(path)
    assert [(c.name, c.outcome, c.nodeid, c.runs) for c in cases] == [
        ("", P, None, (P,)),
        ("", E, None, (E,)),
        ("", P, None, (P,)),
    ]


def test_one_run_per_plain_case() -> None:
    cases = parse_report(fixture("pytest_xunit1.xml"))
    assert cases and all(c.runs == (c.outcome,) and not c.flaky for c in cases)


def test_node_test_runner_top_level_tests_and_describe_blocks_are_kept() -> None:
    # node --test --test-reporter=junit (Node 20): a describe block is a nested <testsuite>, the case says only
    # its own title, and a top-level test() sits right under <testsuites>. Before, that one was lost.
    cases = {c.name: c for c in parse_report(fixture("node_test_runner.xml"))}
    assert set(cases) == {"adds two numbers", "adds zero (identity)", "top level"}
    assert cases["adds two numbers"].suites == ("math", "add") and cases["adds two numbers"].outcome is Outcome.FAILED
    assert cases["top level"].suites == () and cases["top level"].outcome is Outcome.PASSED
    assert all(c.file is None and c.classname == "test" for c in cases.values())


def test_mocha_junit_reporters_file_on_the_suite_is_the_cases_file() -> None:
    cases = parse_report(fixture("mocha_junit_reporter.xml"))
    assert [(c.name, c.file, c.suites) for c in cases] == [
        ("math add adds two numbers", "/home/runner/work/app/app/test/math.test.js", ("add",)),
        ("math add adds zero (identity)", "/home/runner/work/app/app/test/math.test.js", ("add",)),
    ]
