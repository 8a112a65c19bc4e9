"""The action's integration tests: a bare ``origin`` and a workspace clone, webhook payloads, the runner's
``INPUT_*`` environment, one run of the action in-process, and a stand-in for the healing loop."""

from __future__ import annotations

import atexit
import io
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from selfix_action.commands.action_cmd import run_action
from selfix_action.heal import HealContext
from selfix_action.repair.loop import HealResult
from selfix_action.repair.patches import unified_diff
from selfix_action.repair.report import STOP_EXPLANATIONS, HealReport, PatchRecord, StopReason
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.projects import REPO_ROOT

WEBHOOKS = REPO_ROOT / "tests" / "fixtures" / "github" / "webhooks"
REPO = "octo-org/octo-repo"

PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n'
# A bug the offline engine fixes with its first candidates (a wrong constant), so a real heal takes seconds.
HEALABLE = {
    "pyproject.toml": PYPROJECT,
    "calc.py": "def limit():\n    return 9\n\n\ndef double(x):\n    return x * 2\n",
    "tests/test_calc.py": (
        "from calc import double, limit\n\n\ndef test_limit():\n    assert limit() == 10\n\n\n"
        "def test_double():\n    assert double(2) == 4\n"
    ),
}
# The same project in a monorepo's subfolder; its CI runs `cd backend && pytest`, so the report (JUNIT) is the same.
BACKEND = {f"backend/{rel}": text for rel, text in HEALABLE.items()}
FIXED_CALC = "def limit():\n    return 10\n\n\ndef double(x):\n    return x * 2\n"
# No repair template turns one string into another: a real heal gives up quickly.
UNHEALABLE = {
    "pyproject.toml": PYPROJECT,
    # Needs new logic (a loop or recursion), which no single-edit template writes; the assertion message holds
    # no literal to copy (a string-guided template would heal a wrong greeting).
    "calc.py": "def fib(n):\n    return n\n",
    "tests/test_calc.py": (
        "from calc import fib\n\n\ndef test_fib():\n    assert [fib(n) for n in range(1, 11)] == "
        "[1, 1, 2, 3, 5, 8, 13, 21, 34, 55]\n"
    ),
}

# The failing run's report for HEALABLE, as the test workflow's artifact holds it.
F2P = "tests/test_calc.py::test_limit"
JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2" failures="1" errors="0">
<testcase classname="tests.test_calc" name="test_limit" file="tests/test_calc.py" time="0.01">
<failure message="assert 9 == 10">assert 9 == 10</failure></testcase>
<testcase classname="tests.test_calc" name="test_double" file="tests/test_calc.py" time="0.01"/>
</testsuite></testsuites>
"""


def junit_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("reports/junit.xml", JUNIT)
    return buf.getvalue()


def remote_branches(repos: Repos) -> dict[str, str]:
    out = git(repos.origin, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
    return dict(line.split() for line in out.splitlines())


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": "/usr/bin:/bin:/usr/local/bin",
            "HOME": str(cwd),
            "GIT_AUTHOR_NAME": "dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
        },
    ).stdout.strip()


@dataclass
class Repos:
    origin: Path
    workspace: Path
    main_sha: str
    feature_sha: str  # branch "feature/avg" holds the bug; main is the clean base


# Built once per (worker) process and per file set, then copied: a dozen git processes per test made the suite slow.
_TEMPLATES: dict[str, Repos] = {}


def make_repos(root: Path, files: dict[str, str]) -> Repos:
    """A bare ``origin`` (main + feature/avg) and a clone of it in ``root``, copied from a per-process template."""
    key = json.dumps(files, sort_keys=True)
    template = _TEMPLATES.get(key)
    if template is None:
        base = Path(tempfile.mkdtemp(prefix="selfix-test-repos-"))
        atexit.register(shutil.rmtree, base, True)
        template = _TEMPLATES[key] = _build_repos(base, files)
    origin, workspace = root / "origin.git", root / "workspace"
    shutil.copytree(template.origin, origin, symlinks=True)
    shutil.copytree(template.workspace, workspace, symlinks=True)
    config = workspace / ".git" / "config"  # the clone's origin is the copy, not the template
    config.write_text(config.read_text().replace(str(template.origin), str(origin)))
    return Repos(origin, workspace, template.main_sha, template.feature_sha)


def _build_repos(root: Path, files: dict[str, str]) -> Repos:
    origin = root / "origin.git"
    git(root, "init", "--bare", "-b", "main", str(origin))
    seed = root / "seed"
    git(root, "clone", "-q", str(origin), str(seed))
    (seed / "README.md").write_text("demo\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "base")
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    main_sha = git(seed, "rev-parse", "HEAD")
    for rel, text in files.items():
        (seed / rel).parent.mkdir(parents=True, exist_ok=True)
        (seed / rel).write_text(text)
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "feature with a bug")
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/feature/avg")
    feature_sha = git(seed, "rev-parse", "HEAD")
    workspace = root / "workspace"
    git(root, "clone", "-q", str(origin), str(workspace))  # like actions/checkout: the default branch
    return Repos(origin, workspace, main_sha, feature_sha)


def payload(name: str) -> dict[str, Any]:
    return json.loads((WEBHOOKS / name).read_text())


def workflow_run_payload(
    sha: str,
    branch: str,
    *,
    run_id: int = 4242,
    conclusion: str = "failure",
    pulls: tuple[int, ...] = (),
    head_repo: str = REPO,
) -> dict[str, Any]:
    data = payload("workflow_run.completed.payload.json")
    data["repository"].update(full_name=REPO, default_branch="main")
    run = data["workflow_run"]
    run.update(id=run_id, head_sha=sha, head_branch=branch, conclusion=conclusion, event="push")
    run["pull_requests"] = [{"number": n, "id": n, "url": ""} for n in pulls]
    run["head_repository"]["full_name"] = head_repo
    run["repository"]["full_name"] = REPO
    return data


def comment_payload(
    body: str, *, login: str = "Codertocat", user_type: str = "User", number: int = 101, comment_id: int = 555
) -> dict[str, Any]:
    data = payload("issue_comment.created.payload.json")
    data["repository"].update(full_name=REPO, default_branch="main")
    data["issue"]["number"] = number
    data["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{number}"}
    data["comment"].update(body=body, id=comment_id)
    data["comment"]["user"].update(login=login, type=user_type)
    return data


@dataclass
class Run:
    code: int
    out: str
    outputs: dict[str, str]
    summary: str


ACTION_YML = REPO_ROOT / "action.yml"


JOB_TOKEN = "ghs_jobtoken0123456789"  # what ${{ github.token }} evaluates to in these tests


def runner_inputs(**given: str) -> dict[str, str]:
    """``INPUT_*`` exactly as the Actions runner sets them for a Docker action: every input that action.yml
    declares, with its default when the workflow gives none (defaults included, "" when there is none, the
    ``${{ github.token }}`` expression evaluated), the name upper-cased with spaces as underscores."""
    declared = yaml.safe_load(ACTION_YML.read_text(encoding="utf-8"))["inputs"]
    unknown = set(given) - set(declared)
    assert not unknown, f"not inputs of action.yml: {sorted(unknown)}"
    env = {}
    for name, spec in declared.items():
        value = given.get(name, str((spec or {}).get("default", "") or ""))
        value = value.replace("${{ github.token }}", JOB_TOKEN)
        assert "${{" not in value, f"an expression this helper does not evaluate: {name}: {value}"
        env[f"INPUT_{name.replace(' ', '_').upper()}"] = value
    return env


def action_env(
    tmp_path: Path, fake: FakeGitHub, repos: Repos, event: str, data: dict[str, Any], **inputs: str
) -> dict[str, str]:
    event_path = tmp_path / f"event-{event}.json"
    event_path.write_text(json.dumps(data))
    runner_temp = tmp_path / "runner_temp"
    runner_temp.mkdir(exist_ok=True)
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(tmp_path),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": fake.url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_WORKSPACE": str(repos.workspace),
        "GITHUB_RUN_ID": "9001",
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "RUNNER_TEMP": str(runner_temp),
        "SELFIX_API_WRITE_INTERVAL": "0",
        "SELFIX_API_MAX_WAIT": "10",
        "SELFIX_API_BACKOFF": "0.05",
    }
    env.update(
        runner_inputs(**{"github_token": "ghs_faketoken", "test_command": f"{sys.executable} -m pytest", **inputs})
    )
    return env


def parse_outputs(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if not path.exists():
        return out
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if "<<" not in lines[i]:  # key=value, as an earlier step may have written
            key, _, plain = lines[i].partition("=")
            out[key] = plain
            i += 1
            continue
        key, _, delim = lines[i].partition("<<")
        value = []
        i += 1
        while lines[i] != delim:
            value.append(lines[i])
            i += 1
        out[key] = "\n".join(value)
        i += 1
    return out


def invoke(env: dict[str, str], healer: Callable[[HealContext], HealResult] | None = None) -> Run:
    out, err = io.StringIO(), io.StringIO()
    code = run_action(env, out, err, healer=healer)
    summary = Path(env["GITHUB_STEP_SUMMARY"])
    return Run(
        code,
        out.getvalue() + err.getvalue(),
        parse_outputs(Path(env["GITHUB_OUTPUT"])),
        summary.read_text() if summary.exists() else "",
    )


def synthetic(healed: bool, calls: list[HealContext] | None = None) -> Callable[[HealContext], HealResult]:
    """A stand-in for the healing loop (the real one runs in the tests marked ``real heal``): the result the
    loop gives for HEALABLE, so publishing can be tested in milliseconds."""

    def heal(request: HealContext) -> HealResult:
        if calls is not None:
            calls.append(request)
        original = (request.repo / "calc.py").read_text()
        reason = StopReason.HEALED if healed else StopReason.HYPOTHESES_EXHAUSTED
        files = {"calc.py": FIXED_CALC} if healed else None
        patch = None
        if healed:
            diff = unified_diff({"calc.py": original}, files)
            patch = PatchRecord(
                candidate_id="H1-C1",
                hypothesis_id="H1",
                template="constant",
                description="line 2: replace `9` with `10`",
                files=("calc.py",),
                diff=diff,
                changed_lines=1,
                minimized_from_hunks=1,
                hunks=1,
            )
        report = HealReport(
            repo=REPO,
            engine="offline",
            stop_reason=reason,
            explanation=STOP_EXPLANATIONS[reason],
            exit_code=int(reason.exit_code),
            f2p_tests=("tests/test_calc.py::test_limit",),
            p2p_tests=("tests/test_calc.py::test_double",),
            patch=patch,
            tests_before={"tests/test_calc.py::test_limit": "failed", "tests/test_calc.py::test_double": "passed"},
            tests_after={"tests/test_calc.py::test_limit": "passed", "tests/test_calc.py::test_double": "passed"}
            if healed
            else {},
        )
        return HealResult(report=report, files=files, originals={"calc.py": original})

    return heal
