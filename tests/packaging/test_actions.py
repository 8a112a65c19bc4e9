"""Both action variants: valid action metadata (GitHub's schema, from check-jsonschema's vendored copy: no
network), and the composite one (composite/action.yml) takes exactly the Docker one's inputs and gives its
outputs, passes every input to `selfix action` as INPUT_<NAME> like the runner does for a Docker action, and
makes the workflow's `python` the project's interpreter."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from selfix_action.action.settings import load_settings
from selfix_action.ci.request import PROJECT_PYTHON_ENV, heal_request
from tests.helpers.action import runner_inputs
from tests.helpers.packaging import COMPOSITE_ACTION, DOCKER_ACTION, REPO_ROOT, run, script, tool

composite = script("composite")
release_image = script("release_image")

_EXPRESSION = re.compile(r"\$\{\{\s*inputs\.(?P<name>[\w-]+)\s*\}\}")


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _schema_errors(*paths: Path) -> str:
    checker = tool("check-jsonschema")
    proc = run([checker, "--builtin-schema", "vendor.github-actions", *map(str, paths)])
    return "" if proc.returncode == 0 else proc.stdout + proc.stderr


def test_both_action_files_pass_github_action_schema() -> None:
    assert _schema_errors(DOCKER_ACTION, COMPOSITE_ACTION) == ""


def test_schema_check_catches_a_broken_action(tmp_path: Path) -> None:
    broken = tmp_path / "action.yml"
    broken.write_text("name: x\ndescription: y\nruns:\n  using: composite\n")  # a composite action needs steps
    assert "Schema validation errors" in _schema_errors(broken)


def test_composite_action_is_generated_from_the_docker_action() -> None:
    assert composite.main(["--check"]) == 0, "run: python packaging/composite.py"


def test_composite_inputs_are_the_docker_inputs() -> None:
    docker, comp = _load(DOCKER_ACTION), _load(COMPOSITE_ACTION)
    assert comp["runs"]["using"] == "composite"
    assert list(comp["inputs"]) == list(docker["inputs"])
    for name, spec in docker["inputs"].items():
        mine = comp["inputs"][name]
        assert mine["description"] == spec["description"], name
        assert mine.get("default", "") == spec.get("default", ""), name
        assert bool(mine.get("required")) == bool(spec.get("required")), name
    assert {name: spec["description"] for name, spec in comp["outputs"].items()} == {
        name: spec["description"] for name, spec in docker["outputs"].items()
    }
    for name, spec in comp["outputs"].items():
        assert spec["value"] == f"${{{{ steps.selfix.outputs.{name} }}}}"


def _selfix_step(action: dict[str, Any]) -> dict[str, Any]:
    (step,) = [step for step in action["runs"]["steps"] if step.get("id") == "selfix"]
    return step


def test_composite_passes_every_input_as_the_runner_does() -> None:
    """Evaluating the selfix step's env with the workflow's inputs (defaults where none is given) yields exactly
    the INPUT_* a Docker action gets from the runner (tests/action/conftest.py runner_inputs), and nothing else."""
    given = {"mode": "report", "test_command": "python -m pytest -x", "anthropic_api_key": "sk-ant-test"}
    # What `${{ inputs.NAME }}` evaluates to in the composite action: the workflow's value, else the composite's
    # own default (evaluated like the runner evaluates the Docker action's: runner_inputs() with nothing given).
    defaults = runner_inputs()
    values = {name: given.get(name, defaults[f"INPUT_{name.upper()}"]) for name in _load(COMPOSITE_ACTION)["inputs"]}
    step_env = _selfix_step(_load(COMPOSITE_ACTION))["env"]
    evaluated = {}
    for key, template in step_env.items():
        match = _EXPRESSION.fullmatch(str(template))
        assert match, f"{key}: {template!r} is not one input"
        evaluated[key] = values[match["name"]]
    assert evaluated == runner_inputs(**given)


def test_composite_scripts_take_inputs_through_env_only() -> None:
    """No ${{ }} inside a run: script (an input would be pasted into bash: template injection)."""
    for step in _load(COMPOSITE_ACTION)["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name") or step.get("id")


def test_composite_installs_selfix_apart_from_the_project() -> None:
    steps = _load(COMPOSITE_ACTION)["runs"]["steps"]
    setup = next(step for step in steps if str(step.get("uses", "")).startswith("actions/setup-python@"))
    assert re.fullmatch(r"actions/setup-python@[0-9a-f]{40}", setup["uses"])
    assert setup["with"]["update-environment"] is False  # PATH stays the workflow's: `python` is the project's
    install = next(step for step in steps if "install.sh" in step.get("run", ""))
    argv = shlex.split(install["run"])
    assert argv[1:] == [
        "$GITHUB_ACTION_PATH/../packaging/install.sh",
        "$SELFIX_PYTHON",
        "$RUNNER_TEMP/selfix/venv",
        "$GITHUB_ACTION_PATH/..",
    ]
    assert "$RUNNER_TEMP/selfix/venv/bin/selfix" in _selfix_step({"runs": {"steps": steps}})["run"]


def test_project_python_from_the_composite_is_the_default_test_interpreter(tmp_path: Path) -> None:
    project_python = tmp_path / "toolcache" / "bin" / "python3.13"
    project_python.parent.mkdir(parents=True)
    project_python.symlink_to(sys.executable)
    env = {"GITHUB_WORKSPACE": str(tmp_path), **runner_inputs()}
    assert heal_request(load_settings(env), env, (), "").test_cmd == (sys.executable, "-m", "pytest")  # Docker
    env[PROJECT_PYTHON_ENV] = str(project_python)
    request = heal_request(load_settings(env), env, (), "")
    assert request.test_cmd == (str(project_python), "-m", "pytest")  # composite: the workflow's interpreter
    env["INPUT_TEST_COMMAND"] = f"{sys.executable} -m pytest -q"
    assert heal_request(load_settings(env), env, (), "").test_cmd == (sys.executable, "-m", "pytest", "-q")


def test_main_builds_the_dockerfile_and_a_release_points_at_the_image(tmp_path: Path) -> None:
    """On main the action builds the repository's Dockerfile; the release rewrite changes exactly that line to an
    image pinned by digest, and the result is still a valid action."""
    text = DOCKER_ACTION.read_text(encoding="utf-8")
    assert _load(DOCKER_ACTION)["runs"] == {"using": "docker", "image": "Dockerfile"}
    image = "docker://ghcr.io/octo-org/selfix-action:1.2.3@sha256:" + "ab" * 32
    released = tmp_path / "action.yml"
    released.write_text(release_image.point_at_image(text, image), encoding="utf-8")
    assert _load(released)["runs"] == {"using": "docker", "image": image}
    changed = [
        pair for pair in zip(text.splitlines(), released.read_text().splitlines(), strict=True) if pair[0] != pair[1]
    ]
    assert len(changed) == 1
    assert _schema_errors(released) == ""
    for bad in ("docker://ghcr.io/octo-org/selfix-action:1.2.3", "Dockerfile", "docker://evil.example/x:1@sha256:00"):
        with pytest.raises(release_image.ReleaseError):
            release_image.point_at_image(text, bad)
    with pytest.raises(release_image.ReleaseError, match="found 0"):
        release_image.point_at_image(released.read_text(), image)  # released twice: refused, not half-edited
    assert (REPO_ROOT / "packaging" / "release_image.py").exists()
