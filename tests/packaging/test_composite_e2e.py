"""The composite variant end to end, as the runner runs it: the selfix step's script from composite/action.yml
in bash, its env evaluated from the workflow's inputs (all defaults but the token), selfix started from a venv
of its own under $RUNNER_TEMP, and the project's own interpreter first on PATH as actions/setup-python leaves it.
The project's tests import a package that only the project's environment has, so the heal succeeds only if the
test runs use the workflow's `python`, not selfix's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.action import (
    HEALABLE,
    REPO,
    action_env,
    make_repos,
    parse_outputs,
    runner_inputs,
    workflow_run_payload,
)
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.packaging import COMPOSITE_ACTION

_EXPRESSION = re.compile(r"\$\{\{\s*inputs\.(?P<name>[\w-]+)\s*\}\}")


def _project_python(tmp_path: Path) -> Path:
    """A venv of the project's own (made from the base interpreter, without selfix's venv) holding `projectdep`;
    pytest and coverage come from the dev environment's site-packages through a .pth file."""
    venv = tmp_path / "toolcache" / "project-venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = (venv / "lib").glob("python*/site-packages")
    dev_site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    (site / "dev-tools.pth").write_text(f"{dev_site}\n")
    (site / "projectdep.py").write_text("LIMIT = 10\n")
    return venv / "bin" / "python"


@pytest.mark.slow
def test_composite_step_heals_with_the_workflow_python(tmp_path: Path) -> None:
    files = dict(HEALABLE)
    files["tests/test_calc.py"] = "import projectdep\n\n" + files["tests/test_calc.py"].replace(
        "assert limit() == 10", "assert limit() == projectdep.LIMIT"
    )
    repos = make_repos(tmp_path, files)
    fake = FakeGitHub(REPO, "main").start()
    try:
        env = action_env(
            tmp_path,
            fake,
            repos,
            "workflow_run",
            workflow_run_payload(repos.feature_sha, "feature/avg"),
            test_command="",  # the default: the project's `python -m pytest`
        )
        given = {name: env[f"INPUT_{name.upper()}"] for name in ("github_token",)}
        for key in [key for key in env if key.startswith("INPUT_")]:
            del env[key]  # a composite step gets its inputs only through the step's env below
        step = next(
            step for step in yaml.safe_load(COMPOSITE_ACTION.read_text())["runs"]["steps"] if step.get("id") == "selfix"
        )
        values = {**{k.removeprefix("INPUT_").lower(): v for k, v in runner_inputs().items()}, **given}
        for key, template in step["env"].items():
            env[key] = values[_EXPRESSION.fullmatch(template)["name"]]
        selfix_bin = Path(env["RUNNER_TEMP"]) / "selfix" / "venv" / "bin"
        selfix_bin.mkdir(parents=True)
        (selfix_bin / "selfix").symlink_to(Path(sys.executable).with_name("selfix"))  # selfix's own venv
        project_python = _project_python(tmp_path)
        env["PATH"] = os.pathsep.join([str(project_python.parent), env["PATH"]])
        proc = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            start_new_session=True,
        )
        outputs = parse_outputs(Path(env["GITHUB_OUTPUT"]))
        assert outputs.get("status") == "healed", proc.stdout[-4000:] + proc.stderr[-4000:]
        assert fake.calls_of("POST", r"/pulls$"), "no fix PR"
    finally:
        fake.stop()
