"""``selfix mcp`` started as a subprocess and driven over stdio with the MCP SDK's own client, the way a coding
agent uses it: the tools listed with their schemas, each one called, bad input answered as results, two calls
at once, a cancelled call leaving no process behind, and an agent's session that leaves the tree as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from selfix_action.mcp_server.results import JUnitResult, PatchOutcome, ReproduceResult
from selfix_action.repair.patches import unified_diff
from tests.helpers.mcp_session import (
    EDITS_A_TEST,
    RIGHT_FIX,
    WRONG_FIX,
    call,
    descendants,
    mcp_client,
    server_pid,
    tree_snapshot,
)
from tests.helpers.projects import junit_report

TOOLS = {"reproduce", "localize", "run_tests", "verify_patch", "heal", "junit"}
SUM_TO_TEN = "tests/test_range_sum.py::test_sum_to_ten"
SUM_RANGE_EMPTY = "tests/test_range_sum.py::test_sum_range_empty"


def test_the_tools_are_listed_with_input_and_output_schemas(range_sum: Path) -> None:
    async def session() -> None:
        async with mcp_client(range_sum) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == TOOLS
            for tool in listed.values():
                assert tool.description, tool.name
                assert tool.output_schema is not None and "error" in tool.output_schema["properties"], tool.name
            assert listed["verify_patch"].input_schema["required"] == ["diff"]
            assert "accepted" in listed["verify_patch"].output_schema["properties"]  # type: ignore[index]
            assert listed["reproduce"].annotations is not None and listed["reproduce"].annotations.read_only_hint

    anyio.run(session)


@pytest.mark.slow
def test_an_agent_session_reproduce_then_a_wrong_patch_then_the_right_one(range_sum: Path) -> None:
    """reproduce -> a wrong patch rejected with why -> the right one accepted, minimized, with its confidence;
    every file of the tree (and git status) byte for byte as before."""
    before = tree_snapshot(range_sum)

    async def session() -> tuple[dict, dict, dict]:
        async with mcp_client(range_sum) as client:
            reproduced = await call(client, "reproduce")
            wrong = await call(client, "verify_patch", diff=WRONG_FIX)
            right = await call(client, "verify_patch", diff=RIGHT_FIX)
            return reproduced, wrong, right

    raw_reproduced, wrong, right = anyio.run(session)
    reproduced = ReproduceResult.model_validate(raw_reproduced)
    assert reproduced.error is None
    assert sorted(f.nodeid for f in reproduced.failing) == [
        "tests/test_range_sum.py::test_sum_to_small_values",
        SUM_TO_TEN,
    ]
    assert reproduced.flaky == [] and reproduced.passing == 5 and reproduced.isolation

    wrong_outcome = PatchOutcome.model_validate(wrong)
    assert wrong_outcome.error is None and not wrong_outcome.accepted and not wrong_outcome.applied
    assert wrong_outcome.patch is None
    (why,) = wrong_outcome.rejections
    assert why.stage == "fail_to_pass"
    assert why.failing_tests[0] == "tests/test_range_sum.py::test_sum_to_small_values"
    assert "assert 0 == 1" in why.detail  # sum_to(1): the special case of 10 fixes nothing else

    right_outcome = PatchOutcome.model_validate(right)
    assert right_outcome.error is None and right_outcome.accepted and right_outcome.stop_reason == "healed"
    assert right_outcome.engine == "given" and not right_outcome.applied
    assert right_outcome.patch is not None and right_outcome.patch.confirmed
    assert "+    for i in range(1, n + 1):" in right_outcome.patch.diff
    assert right_outcome.patch.hunks == 1
    assert right_outcome.confidence is not None and right_outcome.confidence.level == "high"
    assert {r.code for r in right_outcome.confidence.reasons} >= {"confirmed", "localized"}
    assert right_outcome.verification == "confirmed on the whole suite"
    assert tree_snapshot(range_sum) == before


@pytest.mark.slow
def test_verify_patch_minimizes_and_applies_only_when_asked(range_sum: Path) -> None:
    """A patch with an unneeded hunk comes back without it; apply=true writes exactly the minimized patch."""
    original = (range_sum / "range_sum.py").read_text(encoding="utf-8")
    fixed = original.replace("range(1, n):", "range(1, n + 1):")
    reworded = fixed.replace("up to and including n if n is even", "up to and including n (when n is even)")
    extra = unified_diff({"range_sum.py": original}, {"range_sum.py": reworded})
    assert extra.count("@@ ") == 2

    async def session() -> dict:
        async with mcp_client(range_sum) as client:
            return await call(client, "verify_patch", diff=extra, apply=True)

    outcome = PatchOutcome.model_validate(anyio.run(session))
    assert outcome.accepted and outcome.applied, outcome
    assert outcome.patch is not None and outcome.patch.minimized_from_hunks == 2 and outcome.patch.hunks == 1
    assert (range_sum / "range_sum.py").read_text(encoding="utf-8") == fixed


def test_bad_input_is_answered_as_a_result_and_changes_nothing(range_sum: Path, tmp_path: Path) -> None:
    before = tree_snapshot(range_sum)
    outside = tmp_path / "outside.xml"
    outside.write_text("<testsuite/>", encoding="utf-8")
    escape = "--- a/../outside.py\n+++ b/../outside.py\n@@ -0,0 +1 @@\n+x = 1\n"
    stale = RIGHT_FIX.replace("    for i in range(1, n):", "    for i in range(0, n):")

    async def session() -> dict[str, dict]:
        async with mcp_client(range_sum) as client:
            return {
                "stale": await call(client, "verify_patch", diff=stale),
                "garbage": await call(client, "verify_patch", diff="not a diff at all\n"),
                "test edit": await call(client, "verify_patch", diff=EDITS_A_TEST),
                "ci edit": await call(
                    client,
                    "verify_patch",
                    diff="--- /dev/null\n+++ b/.github/workflows/x.yml\n@@ -0,0 +1 @@\n+on: push\n",
                ),
                "escape": await call(client, "verify_patch", diff=escape),
                "outside test": await call(client, "run_tests", tests=["../elsewhere/test_x.py::test_x"]),
                "outside report": await call(client, "junit", paths=[str(outside)]),
            }

    answers = anyio.run(session)
    messages = {name: answer["error"] for name, answer in answers.items()}
    assert all(error is not None and error["kind"] == "bad_input" for error in messages.values()), messages
    assert "does not apply" in messages["stale"]["message"] and "line 7" in messages["stale"]["message"]
    assert "not a unified diff" in messages["garbage"]["message"]
    assert "tests/test_range_sum.py (test file)" in messages["test edit"]["message"]
    assert ".github/workflows/x.yml (CI configuration)" in messages["ci edit"]["message"]
    assert "outside the repository" in messages["escape"]["message"]
    assert "outside the repository" in messages["outside test"]["message"]
    assert "outside the repository" in messages["outside report"]["message"]
    assert tree_snapshot(range_sum) == before


def test_arguments_outside_the_schema_are_refused_by_it(range_sum: Path) -> None:
    """The SDK validates arguments against the tool's input schema: the call fails as a tool result."""

    async def session():  # type: ignore[no-untyped-def]
        async with mcp_client(range_sum) as client:
            return await client.call_tool("heal", {"engine": "nonsense"})

    result = anyio.run(session)
    assert result.is_error and "'offline', 'anthropic', 'openai' or 'auto'" in result.content[0].text


@pytest.mark.slow
def test_run_tests_localize_junit_and_heal(range_sum: Path) -> None:
    report = junit_report(range_sum, range_sum / "junit.xml")
    before = tree_snapshot(range_sum)

    async def session() -> dict[str, dict]:
        async with mcp_client(range_sum) as client:
            return {
                "run": await call(
                    client, "run_tests", tests=[SUM_TO_TEN, "tests/test_range_sum.py::test_sum_range_empty"]
                ),
                "localize": await call(client, "localize"),
                "junit": await call(client, "junit", paths=["junit.xml"]),
                "heal": await call(client, "heal", engine="offline", time_limit=300),
            }

    answers = anyio.run(session)
    run = answers["run"]
    assert run["error"] is None and (run["passed"], run["failed"]) == (1, 1)
    assert {r["nodeid"]: r["status"] for r in run["results"]} == {
        SUM_TO_TEN: "failed",
        SUM_RANGE_EMPTY: "passed",
    }
    localized = answers["localize"]
    assert localized["error"] is None and localized["functions"][0]["name"] == "sum_to"
    assert localized["lines"][0]["file"] == "range_sum.py"
    parsed = JUnitResult.model_validate(answers["junit"])
    assert parsed.error is None and parsed.report is not None and len(parsed.report.cases) == 7
    assert str(report) and not parsed.report.errors
    healed = PatchOutcome.model_validate(answers["heal"])
    assert healed.accepted and healed.engine == "offline" and not healed.applied
    assert healed.patch is not None and "range(1, n + 1)" in healed.patch.diff
    assert tree_snapshot(range_sum) == before


@pytest.mark.slow
def test_two_calls_at_once_each_get_their_answer(range_sum: Path) -> None:
    """A test run answered while another call's test still sleeps in the sandbox: calls do not wait for each
    other (the sleeper would hold a serial server for 600 s) and each runs on a scratch copy of its own."""
    (range_sum / "tests" / "test_slow.py").write_text(SLOW_TEST, encoding="utf-8")
    sleeper_copy: list[str] = []

    async def session() -> dict:
        async with mcp_client(range_sum, "--test-timeout", "600") as client:
            server = server_pid(os.getpid())
            with anyio.fail_after(300):  # a guard against a server that serializes calls, not a measurement
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: call(client, "run_tests", tests=["tests/test_slow.py"]))
                    while not (sleeping := [pid for pid in descendants(server) if _started_slow_test(pid)]):
                        await anyio.sleep(0.1)
                    sleeper_copy.append(os.readlink(f"/proc/{sleeping[0]}/cwd"))
                    verdict = await call(client, "run_tests", tests=[SUM_TO_TEN])
                    assert _alive(sleeping[0])  # the answer came while the other call's test sleeps
                    group.cancel_scope.cancel()
            return verdict

    verdict = anyio.run(session)
    assert [r["status"] for r in verdict["results"]] == ["failed"], verdict
    assert not (range_sum / "slow_started").exists()  # the sleeper ran in a scratch copy of its own
    assert sleeper_copy and Path(sleeper_copy[0]).resolve() != range_sum.resolve()


@pytest.mark.slow
def test_a_cancelled_call_leaves_no_process_behind(range_sum: Path) -> None:
    """The client gives up on a call while the project's test sleeps in the sandbox: every process of that call
    dies (a /proc scan below the server), and the server answers the next call. The test-run limit is 600 s, so
    only the cancellation can have killed them by the time that answer comes."""
    (range_sum / "tests" / "test_slow.py").write_text(SLOW_TEST, encoding="utf-8")
    seen: dict[int, str] = {}
    survivors: list[int] = []

    async def session() -> dict:
        async with mcp_client(range_sum, "--test-timeout", "600") as client:
            server = server_pid(os.getpid())

            async def cancel_once_running(scope: anyio.CancelScope) -> None:
                while not any(_started_slow_test(pid) for pid in descendants(server)):
                    await anyio.sleep(0.1)
                seen.update(descendants(server))
                scope.cancel()

            with anyio.fail_after(300):
                async with anyio.create_task_group() as group:
                    group.start_soon(cancel_once_running, group.cancel_scope)
                    await call(client, "run_tests", tests=["tests/test_slow.py"])
                    raise AssertionError("the call finished: it was meant to be cancelled while running")
            # The next call's answer comes long before the test-run limit (600 s) would have killed the sleeper,
            # and the server (whose exit would end bwrap's children too) is still running.
            answer = await call(client, "run_tests", tests=[SUM_TO_TEN])
            survivors.extend(pid for pid in seen if _alive(pid))
            return answer

    after = anyio.run(session)
    assert seen, "no sandbox process was seen running"
    assert survivors == [], seen
    assert [r["status"] for r in after["results"]] == ["failed"]


SLOW_TEST = """\
import os
import time
from pathlib import Path


def test_slow():
    Path("slow_started").write_text(str(os.getpid()))  # in the scratch copy, the run's working folder
    time.sleep(600)
"""


def _started_slow_test(pid: int) -> bool:
    """``pid`` runs in a scratch copy where the slow test has started (its working folder holds the marker)."""
    try:
        return (Path(f"/proc/{pid}/cwd") / "slow_started").exists()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_without_the_sdk_selfix_mcp_exits_2_saying_how_to_install_it(range_sum: Path) -> None:
    hide = "import sys; sys.modules['mcp'] = None; from selfix_action.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run(
        [sys.executable, "-c", hide, "mcp", "--repo", str(range_sum)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'selfix-action[mcp]'" in proc.stderr


@pytest.mark.parametrize("repo", ["does-not-exist"])
def test_a_repository_that_is_not_a_folder_is_refused(tmp_path: Path, repo: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "selfix_action.cli", "mcp", "--repo", str(tmp_path / repo)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "not a directory" in proc.stderr
