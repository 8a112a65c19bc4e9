"""``selfix fix --from-error``: a production error healed end to end through the CLI, the LLM engine over the
real Anthropic SDK against a local server speaking its wire format; and the inputs it refuses (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.cli import main
from tests.helpers.age_check import edit, hypothesis, qa
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use, serve
from tests.helpers.projects import write_project

PROJECT = {
    "shop/__init__.py": "",
    "shop/cart.py": """
        PRICES = {"pear": 3, "apple": 2}


        def total(items):
            return sum(PRICES[name] * count for name, count in items.items())


        def average(items):
            return total(items) / len(items)
        """,
    "tests/test_cart.py": """
        from shop.cart import average, total


        def test_total():
            assert total({"pear": 2}) == 6


        def test_average():
            assert average({"pear": 1, "apple": 1}) == 2.5
        """,
}
CRASH_LOG = """\
2026-12-01T09:12:44Z ERROR checkout failed
Traceback (most recent call last):
  File "/srv/app/web/views.py", line 20, in checkout
    summary = cart.average(session_items)
  File "/srv/app/shop/cart.py", line 9, in average
    return total(items) / len(items)
ZeroDivisionError: division by zero
"""
REPRODUCES = "from shop.cart import average\n\n\ndef test_empty_cart():\n    assert average({}) == 0\n"
DETECTIVE = {
    "hypotheses": [
        hypothesis(
            "average divides by the number of items, zero for an empty cart",
            0.9,
            "shop/cart.py",
            "average",
            (8, 9),
            "return 0 for an empty cart",
        )
    ]
}
PATCH = edit(
    "shop/cart.py",
    "    return total(items) / len(items)",
    "    return total(items) / len(items) if items else 0",
    "an empty cart averages 0",
)


def _fix(repo: Path, *extra: str) -> int:
    return main(["fix", str(repo), "--quiet", "--max-retry-wait", "0.05", *extra])


def _heal_crash(repo: Path, crash_log: Path, provider: FakeProvider) -> int:
    """``selfix fix --from-error`` with the Anthropic engine, its server the fake provider."""
    with serve(provider) as url:
        return _fix(repo, "--from-error", str(crash_log), "--engine", "anthropic", "--base-url", url, "--api-key", "k")


@pytest.mark.slow
def test_a_crash_log_is_reproduced_then_healed_and_the_patch_adds_the_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "shop", PROJECT)
    (tmp_path / "crash.log").write_text(CRASH_LOG)
    provider = FakeProvider(
        by_tool={
            "write_reproduction_test": [
                anthropic_tool_use("write_reproduction_test", qa(REPRODUCES, "ZeroDivisionError")),  # reproducer
                anthropic_tool_use("write_reproduction_test", qa(REPRODUCES, "ZeroDivisionError")),  # QA of H1
            ],
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", DETECTIVE)],
            "propose_edits": [anthropic_tool_use("propose_edits", PATCH)],
        }
    )
    code = _heal_crash(repo, tmp_path / "crash.log", provider)
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads((repo / ".selfix" / "report.json").read_text())
    test_path = report["reported_error"]["test_path"]
    assert test_path.startswith("tests/test_selfix_average_") and test_path.endswith(".py")
    assert report["reported_error"]["reproduced"] is True
    assert report["reported_error"]["site"] == "shop/cart.py:average"
    assert report["f2p_tests"] == [f"{test_path}::test_empty_cart"]
    diff = (repo / ".selfix" / "patch.diff").read_text()
    assert f"+++ b/{test_path}" in diff and "if items else 0" in diff
    # The reproducer asked first, with the error as this checkout's frames; its usage is a role of its own.
    events = [json.loads(line) for line in (repo / ".selfix" / "trace.jsonl").read_text().splitlines()]
    roles = [e["role"] for e in events if e.get("step") == "model_call"]
    assert roles[:2] == ["reproducer", "detective"]
    first_call = next(e for e in events if e.get("step") == "model_call")
    assert "shop/cart.py:9 in average" in json.dumps(first_call["prompt"])
    # The Detective reads the error as reported beside its reproduction test (the deployment's frames too).
    detective = next(e for e in events if e.get("step") == "model_call" and e["role"] == "detective")
    assert "The production error this heal started from" in json.dumps(detective["prompt"])
    assert "/srv/app/web/views.py" in json.dumps(detective["prompt"])
    markdown = (repo / ".selfix" / "report.md").read_text()
    assert "## Where the error came from" in markdown and "crash.log" in markdown
    # The user's tree is untouched until --apply.
    assert not (repo / test_path).exists()


def test_from_error_is_refused_with_the_offline_engine_or_beside_a_junit_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "shop", PROJECT)
    (tmp_path / "crash.log").write_text(CRASH_LOG)
    assert _fix(repo, "--from-error", str(tmp_path / "crash.log")) == 2
    assert "healing a reported error needs an LLM engine" in capsys.readouterr().err
    (tmp_path / "r.xml").write_text('<testsuite name="s"><testcase classname="a" name="b"/></testsuite>')
    assert _fix(repo, "--from-error", str(tmp_path / "crash.log"), "--junit", str(tmp_path / "r.xml")) == 2
    assert "give one of them" in capsys.readouterr().err
    assert not (repo / ".selfix").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("no traceback here\n", "no Python traceback found"),
        ('{"action": "resolved"}', "holds no exception"),
        ("", "is empty"),
    ],
)
def test_an_unreadable_error_report_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, why: str
) -> None:
    repo = write_project(tmp_path / "shop", PROJECT)
    (tmp_path / "crash.log").write_text(text)
    assert _fix(repo, "--from-error", str(tmp_path / "crash.log"), "--engine", "anthropic", "--api-key", "k") == 2
    assert why in capsys.readouterr().err


def test_a_missing_error_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_project(tmp_path / "shop", PROJECT)
    assert _fix(repo, "--from-error", str(tmp_path / "nope.log")) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.slow
def test_an_error_no_test_reproduces_exits_1_with_each_attempt_and_the_next_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "shop", PROJECT)
    (tmp_path / "crash.log").write_text(CRASH_LOG)
    passes = qa("from shop.cart import average\n\n\ndef test_one_item():\n    assert average({'pear': 1}) == 3\n")
    provider = FakeProvider(
        by_tool={"write_reproduction_test": [anthropic_tool_use("write_reproduction_test", passes)] * 3}
    )
    code = _heal_crash(repo, tmp_path / "crash.log", provider)
    out = capsys.readouterr().out
    assert code == 1, out
    report = json.loads((repo / ".selfix" / "report.json").read_text())
    assert report["stop_reason"] == "error_not_reproduced" and report["usage"]["calls"] == 3
    assert len(report["reported_error"]["attempts"]) == 3
    assert all("passed on the unpatched code" in a for a in report["reported_error"]["attempts"])
    assert report["next_step"].startswith("No test reproduced the error")
    assert not (repo / ".selfix" / "patch.diff").exists()
