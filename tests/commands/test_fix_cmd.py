"""``selfix fix`` end to end: every bundled example healed by the offline engine, verified independently."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.publish.render import job_summary, pr_body
from selfix_action.repair.report import HealReport
from tests.helpers.projects import EXAMPLES, EXPECTED, changed_lines, copy_example, junit_report, write_project

EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "tests").is_dir())


def run_pytest(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_example_expectations_cover_every_example() -> None:
    assert EXAMPLE_NAMES == sorted(EXPECTED)
    assert len(EXAMPLE_NAMES) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_heals_every_example(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = copy_example(name, tmp_path, git=True)
    assert run_pytest(repo).returncode == 1, "the example must start red"
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}

    code = main(["fix", str(repo), "--quiet", "--test-timeout", "20"])

    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert captured.err == ""  # --quiet
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before, "without --apply the tree is untouched"
    out = repo / ".selfix"
    diff = (out / "patch.diff").read_text(encoding="utf-8")
    expected = EXPECTED[name]
    removed, added = changed_lines(diff)
    # A minimal edit at the bug: the buggy line goes, the fix (or an equivalent) comes.
    assert removed == [expected["buggy"]], diff
    assert added[0] in [expected["fixed"], *expected.get("also_acceptable", [])], diff
    if name == "mutable_default":
        assert added[1:] == ["if tags is None:", "tags = []"], diff
    else:
        assert len(added) == 1, diff
    assert f"b/{expected['file']}" in diff

    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["stop_reason"] == "healed" and report["exit_code"] == 0
    assert report["coverage_used"] is True
    assert report["localization_note"].endswith("measured by coverage.py")  # the dev environment has coverage.py
    # The right fix is never called low (engine.plausibility.assess_confidence); `selfix fix` prints the level.
    assert report["confidence"]["level"] in ("high", "medium"), report["confidence"]
    assert f"selfix: confidence {report['confidence']['level']}" in captured.out
    assert all(report["tests_after"][t] == "passed" for t in report["f2p_tests"] + report["p2p_tests"])
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# selfix: healed")
    records = [json.loads(line) for line in (out / "trace.jsonl").read_text().splitlines()]
    assert records[0]["schema_version"] == 1  # the trace schema header (selfix_action.learn.trace_schema)
    steps = [r["step"] for r in records[1:]]
    assert steps[:2] == ["sandbox", "start"] and steps[-2:] == ["stop", "outcome"] and "verify" in steps
    # selfix's output folder is kept out of git status.
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert status.stdout == ""

    # Independently: the patch applies with git apply and the whole suite passes after it.
    check = subprocess.run(
        ["git", "apply", "--check", str(out / "patch.diff")],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    subprocess.run(["git", "apply", str(out / "patch.diff")], cwd=repo, check=True, timeout=60)
    after = run_pytest(repo)
    assert after.returncode == 0, after.stdout


@pytest.mark.slow
def test_apply_writes_the_patch_into_a_plain_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = copy_example("average", tmp_path)
    assert main(["fix", str(repo), "--apply", "--out", str(tmp_path / "out")]) == 0
    progress = capsys.readouterr().err
    assert "reproduce:" in progress and "verify:" in progress  # progress is visible without --quiet
    assert "return sum(values) / len(values)" in (repo / "averages.py").read_text()
    assert run_pytest(repo).returncode == 0
    assert not (repo / ".selfix").exists()  # --out was elsewhere
    # Healed now: a second run has nothing to heal.
    assert main(["fix", str(repo), "--quiet", "--out", str(tmp_path / "out2")]) == 3


@pytest.mark.slow
def test_heals_from_a_junit_report_of_the_failed_run(tmp_path: Path) -> None:
    repo = copy_example("age_check", tmp_path)
    report = junit_report(repo, tmp_path / "junit.xml")
    code = main(["fix", str(repo), "--junit", str(report), "--quiet"])
    assert code == 0
    data = json.loads((repo / ".selfix" / "report.json").read_text())
    assert len(data["f2p_tests"]) == 2 and len(data["p2p_tests"]) == 7


def test_exit_codes_for_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fix", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
    repo = write_project(tmp_path / "p", {"m.py": "X = 1\n", "tests/test_m.py": "def test_x():\n    pass\n"})
    assert main(["fix", str(repo), "--test-cmd", "no-such-program-xyz -m pytest"]) == 2
    assert "test command not found: no-such-program-xyz" in capsys.readouterr().err
    bad = tmp_path / "bad.xml"
    bad.write_text("<testsuite><testcase", encoding="utf-8")
    assert main(["fix", str(repo), "--junit", str(bad)]) == 2
    assert "bad.xml" in capsys.readouterr().err
    assert main(["fix", str(repo), "--test-timeout", "0"]) == 2
    assert main(["fix", str(repo), "--jobs", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["fix", "--no-such-flag"])
    assert exited.value.code == 2


def test_green_junit_report_is_nothing_to_heal(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "p", {"m.py": "X = 1\n", "tests/test_m.py": "def test_x():\n    pass\n"})
    report = junit_report(repo, tmp_path / "junit.xml")
    assert main(["fix", str(repo), "--junit", str(report), "--quiet"]) == 3


def test_project_whose_tests_cannot_run_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_project(tmp_path / "p", {"m.py": "X = 1\n"})
    code = main(["fix", str(repo), "--quiet", "--test-cmd", f"{sys.executable} -c 'raise SystemExit(3)'"])
    assert code == 2
    assert "failed before running any test" in capsys.readouterr().err


@pytest.mark.slow
def test_readme_main_command_heals_the_bundled_example(tmp_path: Path) -> None:
    """The console script itself, as the README's first command runs it."""
    repo = copy_example("range_sum", tmp_path)
    selfix = Path(sys.executable).with_name("selfix")
    if not selfix.exists():
        pytest.skip("the selfix console script is not installed beside this interpreter")
    proc = subprocess.run([str(selfix), "fix", str(repo)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "+    for i in range(1, n + 1):" in proc.stdout or "range(n + 1)" in proc.stdout


def test_llm_engine_without_a_key_is_refused_before_any_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    repo = write_project(tmp_path / "p", {"m.py": "X = 1\n", "tests/test_m.py": "def test_x():\n    pass\n"})
    assert main(["fix", str(repo), "--engine", "anthropic"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert not (repo / ".selfix").exists()


@pytest.mark.slow
def test_report_names_the_isolation_of_the_test_runs(tmp_path: Path) -> None:
    repo = copy_example("inventory", tmp_path)
    assert main(["fix", str(repo), "--quiet", "--isolation", "none"]) == 0
    report = json.loads((repo / ".selfix" / "report.json").read_text())
    assert report["isolation"]["level"] == "none"
    assert any("NO ISOLATION" in note for note in report["notes"])
    markdown = (repo / ".selfix" / "report.md").read_text()
    assert "- Isolation: none (plain subprocess)" in markdown
    # The limits every run had, the memory cap derived from this machine and the parallel checks.
    limits = report["isolation"]["limits"]
    assert limits["wall_seconds"] == 120.0 and limits["memory_bytes"] and "RLIMIT_AS" in limits["memory"]
    assert "- Limits per test run: 120 s wall; memory " in markdown
    # Every process run is accounted for: hot checks, fork-per-run and cold runs (baseline, re-run, confirmation).
    # inventory's fix is a module-level constant: the hot worker cannot swap it, so it is checked fork-per-run.
    kinds = report["process_runs"]
    assert kinds["warm"] >= 1 and kinds["cold"] >= 3 and sum(kinds.values()) >= report["test_runs"]
    assert f"{kinds['hot']} hot check(s)" in markdown and "whole-suite confirmation" in markdown


@pytest.mark.slow
def test_heals_without_coverage_py_in_the_project_environment(tmp_path: Path) -> None:
    repo = copy_example("average", tmp_path)
    runner = repo / "pytest_without_coverage.py"  # inside the repo: the sandbox sees nothing else of /tmp
    runner.write_text(
        "import sys\nsys.modules['coverage'] = None  # as in an environment without coverage.py\n"
        "import pytest\nsys.exit(pytest.main(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    code = main(["fix", str(repo), "--quiet", "--test-cmd", f"{sys.executable} {runner.name}"])
    assert code == 0
    report = json.loads((repo / ".selfix" / "report.json").read_text())
    # selfix's own line collector stands in for the missing coverage.py: localization is still per test.
    assert report["coverage_used"] is True
    assert report["localization_note"].startswith("per-test coverage of 2 failing and 6 passing tests")
    # and the report names what measured it
    assert report["localization_note"].endswith(("measured by sys.settrace", "measured by sys.monitoring"))
    assert "Localization: per-test coverage" in (repo / ".selfix" / "report.md").read_text()
    assert "return sum(values) / len(values)" in (repo / ".selfix" / "patch.diff").read_text()


@pytest.mark.slow
def test_one_name_and_one_count_for_candidates_in_a_real_heal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real heal with static sanity refusals (two_modules): the console names each candidate by the id the
    report, the trace and the PR body use, and the console, report.md, the job summary and the PR body give
    one count of tried and rejected candidates, with rejected among the tried (never "64 tried, 66
    rejected")."""
    repo = copy_example("two_modules", tmp_path, git=True)

    assert main(["fix", str(repo), "--test-timeout", "20"]) == 0

    console = capsys.readouterr()
    out = repo / ".selfix"
    report = HealReport.model_validate_json((out / "report.json").read_text(encoding="utf-8"))
    events = [json.loads(line) for line in (out / "trace.jsonl").read_text(encoding="utf-8").splitlines()[1:]]
    verdicts = [e for e in events if e["step"] == "verify"]
    refused = [e for e in events if e["step"] == "sanity"]
    assert refused, "two_modules no longer has static sanity refusals: this test needs a heal that has some"
    assert report.candidates_rejected_static == len(refused)
    assert report.candidates_tried == len(verdicts)
    assert "full_suite" not in {s for r in report.hypotheses for s in r.rejections_by_stage}
    assert report.candidates_rejected == sum(not e["ok"] for e in verdicts) <= report.candidates_tried
    assert all(r.rejected <= r.candidates_tried for r in report.hypotheses)

    counts = (
        f"{report.candidates_tried} tried, {report.candidates_rejected} rejected; "
        f"{report.candidates_rejected_static} refused untested (static sanity)"
    )
    report_md = (out / "report.md").read_text(encoding="utf-8")
    status = "healed"
    for where, text in (
        ("console", console.out),
        ("report.md", report_md),
        ("job summary", job_summary(status, report, report_md)),
        ("PR body", pr_body(report, run_url="", fp="f")),
    ):
        assert counts in text, f"{where} does not say {counts!r}"
        tried_rejected = re.findall(r"(\d+) tried, (\d+) rejected", text)
        assert all(int(rejected) <= int(tried) for tried, rejected in tried_rejected), (where, tried_rejected)

    progress = [line for line in console.err.splitlines() if "] verify: " in line]
    assert len(progress) == len(verdicts)
    for line, event in zip(progress, verdicts, strict=True):
        assert line.split("] verify: ", 1)[1].startswith(f"{event['candidate']}: "), line
    assert not re.search(r"candidate \d", console.err), "the console numbers candidates the report names by id"
    winner = report.patch
    assert winner is not None
    assert f"{winner.candidate_id}: " in console.err
    for rejection in report.hypotheses[0].rejections[:3]:  # the ones report.md lists
        named = re.escape(rejection.candidate_id)
        assert re.search(rf"\] (verify|sanity): {named}[: ]", console.err), rejection.candidate_id
        assert f"`{rejection.candidate_id}`" in report_md
