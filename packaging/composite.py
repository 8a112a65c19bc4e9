"""Writes composite/action.yml, the composite variant of the action, from action.yml (the Docker variant).

Both variants run the same ``selfix action`` with the same inputs: the composite one declares every input of
action.yml word for word (name, description, required, default) and passes each one as ``INPUT_<NAME>``, the way
the runner passes a Docker action's inputs, so ``selfix action`` reads them the same way. Its outputs are the
Docker action's, taken from the selfix step. Run after editing action.yml's inputs or outputs:

    python packaging/composite.py            # rewrite composite/action.yml
    python packaging/composite.py --check    # exit 1 if it is out of date (tests/packaging/test_composite.py)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKER_ACTION = ROOT / "action.yml"
COMPOSITE_ACTION = ROOT / "composite" / "action.yml"

# actions/setup-python v7.0.0, pinned to its commit (a tag can be moved, a commit cannot).
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97 # v7.0.0"
SELFIX_PYTHON_VERSION = "3.12"  # selfix's own interpreter, the image's version; the project's is the workflow's

HEADER = """\
# selfix, composite variant: runs on the runner itself, in the environment the workflow's own steps set up
# (actions/setup-python, the project's installed dependencies), with selfix in a virtual environment of its own
# under $RUNNER_TEMP installed from the hashed lock (packaging/install.sh). Use it as
# `<owner>/selfix-action/composite@v0`; the Docker variant is the repository's action.yml.
# GENERATED from ../action.yml by packaging/composite.py: edit that file and rerun the script.
"""

STEPS = f"""\
runs:
  using: composite
  steps:
    # selfix's interpreter, apart from the project's: with update-environment false, PATH and pythonLocation stay as
    # the workflow's steps set them, so `python` is still the project's for the heal's test runs.
    - id: selfix-python
      uses: {SETUP_PYTHON}
      with:
        python-version: "{SELFIX_PYTHON_VERSION}"
        update-environment: false
    - name: Install selfix (hashed lock, its own virtual environment)
      shell: bash
      env:
        SELFIX_PYTHON: ${{{{ steps.selfix-python.outputs.python-path }}}}
      run: >-
        bash "$GITHUB_ACTION_PATH/../packaging/install.sh"
        "$SELFIX_PYTHON" "$RUNNER_TEMP/selfix/venv" "$GITHUB_ACTION_PATH/.."
    - id: selfix
      name: selfix action
      shell: bash
      env:
{{env}}      # The project's interpreter is the workflow's `python`, not selfix's venv: selfix_action/action/request.py
      # (SELFIX_PROJECT_PYTHON) makes it the default test command's, and setup_command's environment is made from it.
      run: |
        SELFIX_PROJECT_PYTHON="$(command -v python || command -v python3 || true)"
        if [[ -z "$SELFIX_PROJECT_PYTHON" && -z "$INPUT_TEST_COMMAND" ]]; then
          echo "::error::selfix (composite): no python on PATH; set up Python (actions/setup-python)" \\
            "before selfix or give test_command"
          exit 1
        fi
        export SELFIX_PROJECT_PYTHON
        exec "$RUNNER_TEMP/selfix/venv/bin/selfix" action
"""


def _scalar(value: str) -> str:
    """``value`` as one YAML scalar on one line (quoted only where YAML needs it)."""
    if value == "":
        return '""'
    return yaml.safe_dump(value, width=100_000, allow_unicode=True).removesuffix("\n").removesuffix("\n...")


def render(docker: dict[str, Any]) -> str:
    lines = [HEADER.rstrip("\n")]
    for key in ("name", "description", "author"):
        lines.append(f"{key}: {_scalar(str(docker[key]))}")
    branding = docker.get("branding") or {}
    if branding:
        lines.append("branding:")
        lines.extend(f"  {key}: {_scalar(str(value))}" for key, value in branding.items())
    lines.append("inputs:")
    for name, spec in docker["inputs"].items():
        lines.append(f"  {name}:")
        lines.append(f"    description: {_scalar(str(spec['description']))}")
        lines.append(f"    required: {'true' if spec.get('required') else 'false'}")
        if "default" in spec:
            lines.append(f"    default: {_scalar(str(spec['default']))}")
    lines.append("outputs:")
    for name, spec in docker["outputs"].items():
        lines.append(f"  {name}:")
        lines.append(f"    description: {_scalar(str(spec['description']))}")
        lines.append(f"    value: ${{{{ steps.selfix.outputs.{name} }}}}")
    env = "".join(f"        INPUT_{name.upper()}: ${{{{ inputs.{name} }}}}\n" for name in docker["inputs"])
    return "\n".join(lines) + "\n" + STEPS.replace("{env}", env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if composite/action.yml is out of date")
    args = parser.parse_args(argv)
    text = render(yaml.safe_load(DOCKER_ACTION.read_text()))
    if args.check:
        if not COMPOSITE_ACTION.exists() or COMPOSITE_ACTION.read_text() != text:
            print(f"{COMPOSITE_ACTION.relative_to(ROOT)} is out of date: run python packaging/composite.py")
            return 1
        return 0
    COMPOSITE_ACTION.parent.mkdir(exist_ok=True)
    COMPOSITE_ACTION.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
