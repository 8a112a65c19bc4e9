"""The action learns like ``selfix fix``: trace.jsonl in the trace schema, the memory of past fixes read before and
updated after each heal (input ``memory_path``), and view.html beside the report that the workflows upload."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from selfix_action.action.settings import load_settings
from selfix_action.ci.request import REPORT_DIR
from selfix_action.errors import InputError
from selfix_action.heal import HealContext
from selfix_action.learn.trace_schema import read_trace
from selfix_action.repair.loop import HealResult
from selfix_action.repair.values import Frame, TestResult, TestStatus
from tests.helpers.action import HEALABLE, Repos, action_env, invoke, make_repos, synthetic, workflow_run_payload
from tests.helpers.fake_github import FakeGitHub

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "examples" / "workflows"
F2P = "tests/test_calc.py::test_limit"


def with_failure(healed: bool, calls: list[HealContext]) -> Callable[[HealContext], HealResult]:
    """``synthetic`` plus the failure the loop saw, so the run has a failure signature to remember."""
    inner = synthetic(healed, calls)

    def heal(request: HealContext) -> HealResult:
        result = inner(request)
        failure = TestResult(
            nodeid=F2P,
            status=TestStatus.FAILED,
            exc_type="AssertionError",
            message="assert 9 == 10",
            frames=(Frame(file="calc.py", line=2, function="limit"),),
        )
        return dataclasses.replace(result, report=result.report.model_copy(update={"failures": (failure,)}))

    return heal


def cases(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT healed, template, exc_type, frame FROM cases ORDER BY t"))


def test_action_writes_trace_view_and_updates_memory(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    calls: list[HealContext] = []
    payload = workflow_run_payload(repos.feature_sha, "feature/avg")
    env = action_env(tmp_path, fake, repos, "workflow_run", payload, memory_path=".selfix/memory.db")
    run = invoke(env, with_failure(True, calls))
    assert run.outputs["status"] == "healed", run.out
    memory = repos.workspace / ".selfix" / "memory.db"  # memory_path, relative to the workspace
    assert calls[0].memory is not None and calls[0].memory.path == memory and calls[0].trace is not None
    assert cases(memory) == [(1, "constant", "AssertionError", "calc.py:limit")]
    report = Path(run.outputs["report_path"])
    assert report.parent == repos.workspace / REPORT_DIR  # the folder the example workflows upload
    trace = read_trace(report.parent / "trace.jsonl")
    assert trace.header.repo == "octo-org/octo-repo"
    assert trace.steps("outcome")[0].model_dump()["healed"] is True
    view = (report.parent / "view.html").read_text()
    assert 'id="timeline"' in view and "default-src 'none'" in view
    assert "recorded this run in the memory" in run.out

    # A second run reads the memory (the engine gets it) and adds its own case to it.
    again = invoke(env, with_failure(False, calls))
    assert again.outputs["status"] == "not_healed", again.out
    assert calls[1].memory is not None
    assert [row[:2] for row in cases(memory)] == [(1, "constant"), (0, "")]
    assert (report.parent / "view.html").is_file() and not (report.parent / "patch.diff").exists()


def test_memory_path_input(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    env = action_env(tmp_path, fake, repos, "workflow_run", data, memory_path="cache/selfix.db")
    assert invoke(env, with_failure(True, [])).outputs["status"] == "healed"
    assert len(cases(repos.workspace / "cache" / "selfix.db")) == 1
    assert not (repos.workspace / ".selfix" / "memory.db").exists()

    default: list[HealContext] = []  # no memory_path: no memory (docs/LEARNING.md says why)
    run = invoke(action_env(tmp_path, fake, repos, "workflow_run", data), with_failure(True, default))
    assert run.outputs["status"] == "healed" and default[0].memory is None

    calls: list[HealContext] = []
    env = action_env(tmp_path, fake, repos, "workflow_run", data, memory_path="none")
    run = invoke(env, with_failure(True, calls))
    assert run.outputs["status"] == "healed" and calls[0].memory is None
    assert not (repos.workspace / ".selfix" / "memory.db").exists()
    assert (repos.workspace / REPORT_DIR / "view.html").is_file()  # the trace and its view do not need a memory


def test_memory_path_must_stay_in_the_workspace(tmp_path: Path) -> None:
    env = {"GITHUB_WORKSPACE": str(tmp_path), "INPUT_MEMORY_PATH": "../elsewhere/memory.db"}
    with pytest.raises(InputError, match="memory_path"):
        load_settings(env)
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "selfix.yml").write_text("memory_path: /tmp/memory.db\n")
    with pytest.raises(InputError, match="memory_path"):
        load_settings({"GITHUB_WORKSPACE": str(tmp_path)})  # the repository's file may not name an absolute path
    (tmp_path / ".github" / "selfix.yml").write_text("memory_path: ci/memory.db\n")
    assert load_settings({"GITHUB_WORKSPACE": str(tmp_path)}).memory_file == tmp_path / "ci" / "memory.db"


def test_planted_link_is_not_written_through(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repos.workspace / ".selfix").symlink_to(outside)
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    run = invoke(env, with_failure(True, []))
    assert run.code == 1 and "symbolic link" in run.out
    assert list(outside.iterdir()) == []


def _steps(path: Path) -> list[dict[str, object]]:
    workflow = yaml.safe_load(path.read_text())
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_example_workflows_upload_the_report_folder(path: Path) -> None:
    """Every job that heals (the action, or ``selfix heal``) uploads .selfix/report/ (report, trace, view.html)."""
    steps = _steps(path)
    heals = [
        s for s in steps if str(s.get("uses", "")).startswith("selfix-action/selfix-action@") or "selfix heal" in str(s)
    ]
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    if not heals:
        return
    assert any(str(REPORT_DIR) in str(s["with"]["path"]) for s in uploads), path.name  # type: ignore[index]


def test_memory_cache_workflow_caches_the_actions_memory_path() -> None:
    steps = _steps(WORKFLOWS / "selfix-memory-cache.yml")
    names = [str(s.get("uses", "")).split("@")[0] for s in steps]
    cache, action = names.index("actions/cache"), names.index("selfix-action/selfix-action")
    assert cache < action < names.index("actions/upload-artifact")  # restored before the heal, saved at job end
    assert steps[cache]["with"]["path"] == steps[action]["with"]["memory_path"]  # type: ignore[index]


@pytest.mark.slow
def test_real_heal_records_into_the_memory_and_the_next_run_uses_it(tmp_path: Path, fake: FakeGitHub) -> None:
    """No stand-in: two real heals of the same failure share the workspace's memory."""
    repos = make_repos(tmp_path, HEALABLE)
    payload = workflow_run_payload(repos.feature_sha, "feature/avg")
    env = action_env(tmp_path, fake, repos, "workflow_run", payload, memory_path=".selfix/memory.db")
    first = invoke(env)
    assert first.outputs["status"] == "healed", first.out
    memory = repos.workspace / ".selfix" / "memory.db"
    ((healed, template, exc_type, _),) = cases(memory)
    assert healed == 1 and template and exc_type == "AssertionError"
    out = repos.workspace / REPORT_DIR
    assert 'id="timeline"' in (out / "view.html").read_text()
    first_trace = read_trace(out / "trace.jsonl")
    assert first_trace.steps("localize") and first_trace.steps("verify")  # the loop's own events, not only ours

    second = invoke(env)
    assert second.outputs["status"] == "healed", second.out
    assert len(cases(memory)) == 2
    trace = read_trace(out / "trace.jsonl")
    boosted = [e.model_dump().get("boosted") or {} for e in trace.steps("memory")]
    assert any(template in b for b in boosted), boosted
    tried = [trace.steps("outcome")[0].model_dump()["candidates_tried"] for trace in (first_trace, trace)]
    assert tried[1] <= tried[0], tried
