"""Split-privilege mode: ``selfix heal`` writes a bundle with no API writes; ``selfix publish`` verifies it (hashes,
clean apply on the recorded SHA, the SHA still the branch head, allowed paths) before pushing and commenting."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

from selfix_action.ci.gitops import TRAILER, fingerprint
from selfix_action.cli import build_parser
from selfix_action.commands.split_cmd import run_heal, run_publish
from selfix_action.repair.patches import unified_diff
from tests.helpers.action import (
    HEALABLE,
    REPO,
    Repos,
    action_env,
    git,
    parse_outputs,
    synthetic,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub

F2P = "tests/test_calc.py::test_limit"


def heads(repos: Repos) -> dict[str, str]:
    out = git(repos.origin, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
    return dict(line.split() for line in out.splitlines())


def heal(tmp_path: Path, fake: FakeGitHub, repos: Repos, *, healed: bool = True) -> Path:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    bundle = tmp_path / "bundle"
    out, err = io.StringIO(), io.StringIO()
    assert run_heal(env, out, err, bundle_dir=bundle, healer=synthetic(healed)) == 0, out.getvalue() + err.getvalue()
    assert fake.writes() == []  # the heal job never writes to GitHub...
    assert heads(repos).keys() == {"main", "feature/avg"}  # ... nor to origin
    return bundle


def publish(tmp_path: Path, fake: FakeGitHub, repos: Repos, bundle: Path) -> tuple[int, str]:
    env = action_env(tmp_path, fake, repos, "workflow_run", workflow_run_payload(repos.feature_sha, "feature/avg"))
    out, err = io.StringIO(), io.StringIO()
    code = run_publish(bundle, env, out, err)
    return code, out.getvalue() + err.getvalue()


def rehash(bundle: Path) -> None:
    """What an attacker who controls the whole artifact does: make the manifest consistent again."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    for name in manifest["files"]:
        manifest["files"][name] = hashlib.sha256((bundle / name).read_bytes()).hexdigest()
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def replace_patch(bundle: Path, diff: str, files: tuple[str, ...]) -> None:
    (bundle / "patch.diff").write_text(diff)
    report = json.loads((bundle / "report.json").read_text())
    report["patch"].update(diff=diff, files=list(files))
    (bundle / "report.json").write_text(json.dumps(report))
    rehash(bundle)


def test_heal_then_publish_opens_the_fix_pr(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    bundle = heal(tmp_path, fake, repos)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["base_sha"] == repos.feature_sha and manifest["branch"] == "feature/avg"
    assert set(manifest["files"]) == {"patch.diff", "report.json", "report.md"}
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 0, log
    branch = f"selfix/{fingerprint('feature/avg', [F2P])}"
    assert fake.writes() == [("POST", f"/repos/{REPO}/pulls"), ("POST", f"/repos/{REPO}/issues/101/labels")]
    tip = heads(repos)[branch]
    assert git(repos.origin, "show", f"{tip}:calc.py").startswith("def limit():\n    return 10")
    assert TRAILER in git(repos.origin, "log", "-1", "--format=%B", tip)
    assert git(repos.origin, "rev-parse", f"{tip}^") == repos.feature_sha


def test_not_healed_bundle_only_comments(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    bundle = heal(tmp_path, fake, repos, healed=False)
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 0, log
    assert heads(repos).keys() == {"main", "feature/avg"}
    assert fake.writes() == [("POST", f"/repos/{REPO}/issues")] and len(fake.state.issues) == 1


@pytest.mark.parametrize("healed", [True, False], ids=["healed", "not-healed"])
def test_publish_points_the_patch_and_report_outputs_at_the_bundle(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, healed: bool
) -> None:
    bundle = heal(tmp_path, fake, repos, healed=healed)
    (tmp_path / "output.txt").unlink()  # only what the publish job writes
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 0, log
    outputs = parse_outputs(tmp_path / "output.txt")
    assert outputs["status"] == ("healed" if healed else "not_healed")
    assert outputs["report_path"] == str((bundle / "report.md").resolve())
    assert Path(outputs["report_path"]).read_text().startswith("# selfix")
    if healed:
        assert outputs["patch_path"] == str((bundle / "patch.diff").resolve())
        assert "+    return 10" in Path(outputs["patch_path"]).read_text()
    else:
        assert outputs["patch_path"] == ""  # as `selfix action` says it: no verified patch


def test_publish_leaves_a_pr_labelled_since_the_heal_alone(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    number = fake.add_pull(head_ref="feature/avg", head_sha=repos.feature_sha, base_ref="main")
    data = workflow_run_payload(repos.feature_sha, "feature/avg", pulls=(number,))
    bundle = tmp_path / "bundle"
    out = io.StringIO()
    assert (
        run_heal(
            action_env(tmp_path, fake, repos, "workflow_run", data), out, out, bundle_dir=bundle, healer=synthetic(True)
        )
        == 0
    )
    assert json.loads((bundle / "manifest.json").read_text())["pull_number"] == number
    fake.label(number, "selfix:skip")
    fake.calls.clear()
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 0 and f"pull request #{number} has the 'selfix:skip' label" in log, log
    assert fake.writes() == [] and heads(repos).keys() == {"main", "feature/avg"}
    assert parse_outputs(tmp_path / "output.txt")["status"] == "skipped"


@pytest.mark.parametrize("what", ["patch.diff", "report.json", "manifest-missing-file"])
def test_a_tampered_bundle_is_refused(tmp_path: Path, fake: FakeGitHub, repos: Repos, what: str) -> None:
    bundle = heal(tmp_path, fake, repos)
    if what == "manifest-missing-file":
        manifest = json.loads((bundle / "manifest.json").read_text())
        del manifest["files"]["report.md"]
        (bundle / "manifest.json").write_text(json.dumps(manifest))
    else:
        text = (bundle / what).read_text()
        (bundle / what).write_text(text.replace("10", "11", 1))
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 1 and ("sha256" in log or "exactly" in log), log
    assert fake.writes() == [] and heads(repos).keys() == {"main", "feature/avg"}


def test_a_moved_branch_head_is_refused(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    bundle = heal(tmp_path, fake, repos)
    # someone pushes to the failing branch between the two jobs
    git(repos.workspace, "fetch", "-q", "origin", "feature/avg")
    git(repos.workspace, "checkout", "-q", "-B", "feature/avg", "FETCH_HEAD")
    (repos.workspace / "NEWS.md").write_text("moved\n")
    git(repos.workspace, "add", "NEWS.md")
    git(repos.workspace, "commit", "-qm", "move the branch")
    git(repos.workspace, "push", "-q", "origin", "HEAD:refs/heads/feature/avg")
    moved = git(repos.workspace, "rev-parse", "HEAD")
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 1 and "moved since the heal job" in log, log
    assert fake.writes() == [] and heads(repos) == {"main": repos.main_sha, "feature/avg": moved}


CALC_TEST = HEALABLE["tests/test_calc.py"]
# A test edited so the failing test "passes"; a new start-up hook; a patch made for another version of calc.py.
PROTECTED_DIFF = unified_diff({"tests/test_calc.py": CALC_TEST}, {"tests/test_calc.py": CALC_TEST.replace("10", "9")})
NEW_HOOK_DIFF = (
    "diff --git a/sitecustomize.py b/sitecustomize.py\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/sitecustomize.py\n@@ -0,0 +1 @@\n+import os\n"
)
STALE_DIFF = unified_diff({"calc.py": "def limit():\n    return 7\n"}, {"calc.py": "def limit():\n    return 10\n"})


@pytest.mark.parametrize(
    ("diff", "files", "expected"),
    [
        (PROTECTED_DIFF, ("tests/test_calc.py",), "may not change"),
        (NEW_HOOK_DIFF, ("sitecustomize.py",), "may not change"),
        (STALE_DIFF, ("calc.py",), "does not apply cleanly"),
    ],
    ids=["test-file", "sitecustomize", "does-not-apply"],
)
def test_a_consistent_but_hostile_bundle_is_refused(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, diff: str, files: tuple[str, ...], expected: str
) -> None:
    bundle = heal(tmp_path, fake, repos)
    replace_patch(bundle, diff, files)  # hashes match: only the content checks can stop it
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 1 and expected in log, log
    assert fake.writes() == [] and heads(repos).keys() == {"main", "feature/avg"}


def test_a_bundle_for_another_repository_is_refused(tmp_path: Path, fake: FakeGitHub, repos: Repos) -> None:
    bundle = heal(tmp_path, fake, repos)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["repository"] = "evil/other"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    code, log = publish(tmp_path, fake, repos, bundle)
    assert code == 1 and "evil/other" in log and fake.writes() == []


def test_cli_has_the_split_commands() -> None:
    args = build_parser().parse_args(["publish", "some/bundle"])
    assert (args.command, args.bundle) == ("publish", Path("some/bundle"))
    assert build_parser().parse_args(["heal", "--bundle", "b"]).bundle == Path("b")
