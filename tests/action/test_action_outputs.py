"""What every run leaves on the runner: the job summary (under 1 MiB), ``::error``/``::group::`` in the log, the step
outputs in GITHUB_OUTPUT, and the isolation the project's tests had (the ``isolation`` inputs reach the sandbox)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from selfix_action.action.log import write_outputs
from selfix_action.action.settings import load_settings
from selfix_action.ci.request import isolation_config
from selfix_action.errors import InputError, SandboxError
from selfix_action.heal import HealContext
from selfix_action.heal import pipeline as pipeline_mod
from selfix_action.publish.render import SUMMARY_LIMIT
from selfix_action.repair.loop import HealResult
from selfix_action.repair.report import Confidence, ConfidenceReason
from selfix_action.repair.values import SuspiciousLine
from selfix_action.sandbox.isolation import IsolationConfig
from tests.helpers.action import Repos, action_env, git, invoke, synthetic, workflow_run_payload
from tests.helpers.fake_github import FakeGitHub

MIB = 1024 * 1024
BWRAP = {
    "level": "bwrap",
    "mechanism": "bwrap as root, command dropped to uid 65534 by setpriv",
    "uid": 65534,
    "process_limit_enforced": True,
    "warnings": [],
    "fallbacks": [],
}


def with_report(healed: bool, **update: object) -> Callable[[HealContext], HealResult]:
    """The synthetic heal, with fields of its report replaced (huge notes, suspicious lines, isolation...)."""
    base = synthetic(healed)

    def heal(request: HealContext) -> HealResult:
        result = base(request)
        return HealResult(result.report.model_copy(update=update), result.files, result.originals)

    return heal


def workflow_env(tmp_path: Path, fake: FakeGitHub, repos: Repos, **inputs: str) -> dict[str, str]:
    data = workflow_run_payload(repos.feature_sha, "feature/avg")
    return action_env(tmp_path, fake, repos, "workflow_run", data, **inputs)


# -- job summary -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("healed", [True, False])
def test_job_summary_stays_under_one_mib_with_a_huge_report(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, healed: bool
) -> None:
    huge = tuple(f"note {i}: " + "é" * 50_000 for i in range(60))  # ~6 MB of multi-byte text
    env = workflow_env(tmp_path, fake, repos)
    run = invoke(env, with_report(healed, notes=huge))
    assert run.code == 0 and run.outputs["status"] == ("healed" if healed else "not_healed"), run.out[-2000:]
    size = Path(env["GITHUB_STEP_SUMMARY"]).stat().st_size
    assert size <= SUMMARY_LIMIT < MIB
    assert run.summary.startswith("# selfix: healed" if healed else "# selfix: not healed")
    assert "truncated" in run.summary[-300:]
    # the comment GitHub receives is bounded too (its limit is 65536 characters)
    bodies = [c.body["body"] for c in fake.calls if isinstance(c.body, dict) and "body" in c.body]
    assert bodies and all(len(body) <= 65536 for body in bodies)


def test_job_summary_respects_what_earlier_steps_wrote(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = workflow_env(tmp_path, fake, repos)
    Path(env["GITHUB_STEP_SUMMARY"]).write_text("x" * (MIB - 100 * 1024))
    run = invoke(env, with_report(True, notes=("y" * 300_000,)))
    assert run.outputs["status"] == "healed"
    assert Path(env["GITHUB_STEP_SUMMARY"]).stat().st_size <= SUMMARY_LIMIT
    assert run.summary.startswith("x" * 1000)  # appended to, never overwritten


# -- annotations and log groups ----------------------------------------------------------------------------------
def test_log_has_error_annotations_at_suspicious_lines_and_groups(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    lines = (
        SuspiciousLine(file="calc.py", line=2, score=0.9, function="limit"),
        SuspiciousLine(file="src/we,ird:name.py", line=7, score=0.5),
        *(SuspiciousLine(file="calc.py", line=n, score=0.1) for n in range(10, 20)),
    )
    run = invoke(workflow_env(tmp_path, fake, repos), with_report(False, suspicious_lines=lines))
    assert run.outputs["status"] == "not_healed", run.out
    errors = [line for line in run.out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 5  # GitHub shows 10 annotations per step; selfix keeps to the most suspicious five
    assert errors[0].startswith("::error file=calc.py,line=2,title=selfix::selfix: suspicious line (score 0.90)")
    # property values are escaped so a file name cannot add or change properties
    assert errors[1].startswith("::error file=src/we%2Cird%3Aname.py,line=7,title=selfix::")
    out = run.out.splitlines()
    for title in ("selfix: JUnit artifacts", "selfix: start", "selfix: publish"):
        start = out.index(f"::group::{title}")
        assert "::endgroup::" in out[start + 1 :]
    opened = [i for i, line in enumerate(out) if line.startswith("::group::")]
    closed = [i for i, line in enumerate(out) if line == "::endgroup::"]
    assert len(opened) == len(closed) and all(o < c for o, c in zip(opened, closed, strict=True))


def test_healed_annotation_points_at_the_fix(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    line = SuspiciousLine(file="calc.py", line=2, score=1.0)
    run = invoke(workflow_env(tmp_path, fake, repos), with_report(True, suspicious_lines=(line,)))
    # A fix is a notice at the line the patch changes, never an error annotation.
    assert "::notice file=calc.py,line=2,title=selfix::selfix: fixed here: line 2: replace `9` with `10`" in run.out
    assert "::error" not in run.out


# -- outputs -------------------------------------------------------------------------------------------------------
def test_outputs_use_random_heredoc_delimiters(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = workflow_env(tmp_path, fake, repos)
    Path(env["GITHUB_OUTPUT"]).write_text("earlier=step\n")
    run = invoke(env, synthetic(True))
    text = Path(env["GITHUB_OUTPUT"]).read_text()
    assert text.startswith("earlier=step\n") and run.outputs["earlier"] == "step"  # appended, not overwritten
    heads = re.findall(r"^(\w+)<<(selfix_[0-9a-f]{24})$", text, re.MULTILINE)
    assert [k for k, _ in heads] == [
        "status",
        "pr_url",
        "patch_path",
        "report_path",
        "cost_usd",
        "tokens",
        "confidence",
        "publish_action",
        "publish_reason",
    ]
    assert len({d for _, d in heads}) == len(heads)  # a fresh delimiter per value
    for key, delimiter in heads:
        assert re.search(rf"^{delimiter}$", text, re.MULTILINE), key
    assert run.outputs["status"] == "healed" and run.outputs["tokens"] == "0"
    assert "+    return 10" in Path(run.outputs["patch_path"]).read_text()
    assert Path(run.outputs["report_path"]).name == "report.md"


def test_multiline_output_values_cannot_inject_outputs(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    hostile = "line one\nEOF\nstatus=healed\nstatus<<EOF\nx\nEOF"
    write_outputs(path, {"pr_url": hostile, "status": "not_healed"}, io.StringIO())
    assert parse_outputs_strict(path) == {"pr_url": hostile, "status": "not_healed"}


def parse_outputs_strict(path: Path) -> dict[str, str]:
    """How the runner reads GITHUB_OUTPUT: ``key<<DELIM`` ... ``DELIM``, or ``key=value``."""
    out: dict[str, str] = {}
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line:
            key, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            out[key] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
            i += 1
        else:
            i += 1
    return out


def test_bad_input_still_sets_the_status_output(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    env = workflow_env(tmp_path, fake, repos, mode="sideways")
    run = invoke(env, synthetic(True))
    assert run.code == 2 and run.outputs["status"] == "error"
    assert "::error title=selfix::" in run.out and fake.calls == []


# -- isolation inputs --------------------------------------------------------------------------------------------
def test_isolation_inputs_map_to_the_isolation_config(tmp_path: Path) -> None:
    base = {"GITHUB_WORKSPACE": str(tmp_path)}
    # Fail closed: auto requires isolation in the action; only an explicit "none" runs without.
    assert isolation_config(load_settings(base)) == IsolationConfig(require_isolation=True)
    assert isolation_config(load_settings({**base, "INPUT_ISOLATION": "none"})) == IsolationConfig(mode="none")
    settings = load_settings({**base, "INPUT_ISOLATION": "unshare", "INPUT_REQUIRE_ISOLATION": "true"})
    assert isolation_config(settings) == IsolationConfig(mode="unshare", require_isolation=True)
    assert isolation_config(settings).sandbox_uid == 65534  # the image has no other runner user
    with pytest.raises(InputError, match="isolation"):
        load_settings({**base, "INPUT_ISOLATION": "chroot"})
    with pytest.raises(InputError, match="require_isolation contradicts"):
        load_settings({**base, "INPUT_ISOLATION": "none", "INPUT_REQUIRE_ISOLATION": "yes"})
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "selfix.yml").write_text("isolation: bwrap\nrequire_isolation: true\n")
    assert isolation_config(load_settings(base)) == IsolationConfig(mode="bwrap", require_isolation=True)


def test_required_isolation_that_is_unavailable_stops_before_any_test_runs(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[IsolationConfig] = []

    def refuse(config: IsolationConfig | None = None) -> object:
        asked.append(config or IsolationConfig())
        raise SandboxError("require_isolation is set but neither bwrap nor unshare works here: bwrap: not installed")

    monkeypatch.setattr(pipeline_mod, "detect_isolation", refuse)
    run = invoke(workflow_env(tmp_path, fake, repos, require_isolation="true"))  # the real healer
    assert (run.code, run.outputs["status"]) == (1, "error")
    assert asked == [IsolationConfig(mode="auto", require_isolation=True)]
    assert "neither bwrap nor unshare" in run.summary
    assert not fake.calls_of("POST")


def test_job_summary_names_the_isolation(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    run = invoke(workflow_env(tmp_path, fake, repos), with_report(True, isolation=BWRAP))
    expected = f"- Isolation: `bwrap` ({BWRAP['mechanism']}), as uid 65534\n"
    assert expected in run.summary


def test_job_summary_warns_loudly_without_isolation(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    none = {
        "level": "none",
        "mechanism": "plain subprocess",
        "uid": 0,
        "warnings": ["the project's code can read every file this user can read."],
        "fallbacks": ["bwrap: not installed", "unshare: Operation not permitted"],
    }
    notes = ("WARNING: NO ISOLATION: the project's code can read every file this user can read.",)
    run = invoke(workflow_env(tmp_path, fake, repos), with_report(False, isolation=none, notes=notes))
    assert "- **WARNING: no isolation**: the project's tests ran unisolated." in run.summary
    assert "- Isolation fallbacks: bwrap: not installed; unshare: Operation not permitted" in run.summary
    assert "- Note: WARNING: NO ISOLATION" in run.summary  # the report's notes are in the summary too


# -- confidence: what selfix does follows it (publish/bar.py, pr_confidence) ------------------------------------------
LOW = Confidence(
    level="low",
    reasons=(
        ConfidenceReason(code="localized", level="high", text="in the top function"),
        ConfidenceReason(code="pattern:guard_deleted", level="low", text="the patch deletes a guard"),
    ),
)
MEDIUM = Confidence(
    level="medium",
    reasons=(
        ConfidenceReason(code="localized", level="high", text="in the top function"),
        ConfidenceReason(code="unconfirmed", level="medium", text="no reproduction test confirmed the hypothesis"),
    ),
)
HIGH = Confidence(level="high", reasons=(ConfidenceReason(code="localized", level="high", text="in the top function"),))


def test_a_medium_confidence_patch_is_a_draft_pr_led_by_the_evidence_against(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    """Through PyGithub against the fake server: the PR is a draft and its body starts with the evidence."""
    run = invoke(workflow_env(tmp_path, fake, repos), with_report(True, confidence=MEDIUM))
    assert (run.outputs["status"], run.outputs["confidence"]) == ("healed", "medium"), run.out
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert pr["draft"] is True and pr["title"].startswith("selfix (medium confidence): fix ")
    body = pr["body"].splitlines()
    assert body[0] == "## selfix: a patch that passes, with medium confidence"
    assert body[2:5] == [
        "**Evidence against this patch** (read this before the rest):",
        "",
        "- no reproduction test confirmed the hypothesis (caps it at medium)",
    ]
    assert git(repos.origin, "rev-parse", "refs/heads/feature/avg") == repos.feature_sha  # the failing branch
    assert (run.outputs["publish_action"], run.outputs["publish_reason"]) == (
        "draft_pr",
        "medium confidence: draft PR (pr_confidence=high)",
    )
    assert "- Published: medium confidence: draft PR (pr_confidence=high)" in run.summary


def test_a_low_confidence_patch_is_one_escalation_with_the_patch_and_nothing_pushed(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    env = workflow_env(tmp_path, fake, repos)
    heads = git(repos.origin, "for-each-ref", "--format=%(refname) %(objectname)")
    run = invoke(env, with_report(True, confidence=LOW))
    assert (run.outputs["status"], run.outputs["confidence"]) == ("healed", "low"), run.out
    assert not fake.calls_of("POST", r"/pulls$") and not fake.state.reviews
    assert git(repos.origin, "for-each-ref", "--format=%(refname) %(objectname)") == heads  # nothing pushed
    (issue,) = fake.state.issues.values()  # a push without a pull request: the failure's one issue
    assert issue["title"] == "selfix: a low-confidence patch for test_limit on feature/avg, not pushed"
    body = issue["body"]
    assert "## selfix: a patch that passes, held back at low confidence" in body
    assert body.index("the patch deletes a guard (lowers it to low)") < body.index("<details>")
    assert "<details><summary>The verified patch (diff)</summary>" in body and "+    return 10" in body
    assert run.outputs["publish_action"] == "escalate" and run.outputs["pr_url"] == ""
    reason = "low confidence: one escalation with the patch attached, nothing pushed (pr_confidence=high)"
    assert run.outputs["publish_reason"] == reason and f"- Published: {reason}" in run.summary
    # the same failure again: the issue is edited, never a second one, and still nothing is pushed
    again = invoke(env, with_report(True, confidence=LOW))
    assert len(fake.state.issues) == 1 and "updated the escalation issue" in again.summary
    assert git(repos.origin, "for-each-ref", "--format=%(refname) %(objectname)") == heads


def test_a_low_confidence_patch_on_a_pull_request_is_its_one_comment(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    env = action_env(tmp_path, fake, repos, "workflow_run", data, mode="commit")
    for _ in range(2):
        run = invoke(env, with_report(True, confidence=LOW))
        assert run.outputs["publish_action"] == "escalate", run.out
    assert git(repos.origin, "rev-parse", "refs/heads/feature/avg") == repos.feature_sha  # nothing pushed
    assert not fake.state.reviews and not fake.calls_of("POST", r"/pulls$")
    (comment,) = fake.state.issue_comments.values()  # posted once, edited by the rerun
    assert "held back at low confidence" in comment["body"] and "+    return 10" in comment["body"]


def test_a_medium_confidence_patch_is_never_pushed_onto_the_pr_branch(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    env = action_env(tmp_path, fake, repos, "workflow_run", data, mode="commit")
    run = invoke(env, with_report(True, confidence=MEDIUM))
    assert run.outputs["status"] == "healed", run.out
    assert git(repos.origin, "rev-parse", "refs/heads/feature/avg") == repos.feature_sha  # nothing pushed
    assert len(fake.state.reviews) == 1 and not fake.calls_of("POST", r"/pulls$")
    assert "review suggestions, not pushed onto the branch (pr_confidence=high)" in run.summary


def test_pr_confidence_low_opens_a_low_confidence_patch_as_a_ready_pr(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    run = invoke(workflow_env(tmp_path, fake, repos, pr_confidence="low"), with_report(True, confidence=LOW))
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert pr["draft"] is False and pr["title"].startswith("selfix (low confidence): fix "), run.out
    assert "the patch deletes a guard (lowers it to low)" in pr["body"].split("Patch confidence:")[0]
    assert run.outputs["publish_reason"] == "low confidence: ready PR (pr_confidence=low)"


def test_a_high_confidence_patch_is_a_ready_pr(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    run = invoke(workflow_env(tmp_path, fake, repos), with_report(True, confidence=HIGH))
    pr = fake.calls_of("POST", r"/pulls$")[0].body
    assert pr["draft"] is False and pr["title"].startswith("selfix: fix ") and run.outputs["confidence"] == "high"
    assert pr["body"].startswith("## selfix: verified fix") and "Evidence against" not in pr["body"]
    assert "**Patch confidence:** high." in run.summary
    assert (run.outputs["publish_action"], run.outputs["publish_reason"]) == (
        "pr",
        "high confidence: ready PR (pr_confidence=high)",
    )


def test_the_escalation_comment_and_job_summary_say_what_to_try_next_in_the_actions_inputs(
    tmp_path: Path, fake: FakeGitHub, repos: Repos
) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    env = action_env(tmp_path, fake, repos, "workflow_run", data)
    run = invoke(env, synthetic(False))  # the offline engine's hypotheses exhausted
    assert run.outputs["status"] == "not_healed", run.out
    (comment,) = fake.state.issue_comments.values()
    for body in (comment["body"], run.summary):
        assert "**Next step:** The offline engine's repair templates found no fix." in body
        assert "`engine: auto` with the `anthropic_api_key`" in body and "--engine" not in body
