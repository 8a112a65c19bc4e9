#!/usr/bin/env bash
# Installs selfix into a virtual environment of its own, from the hashed lock: the one install path of both
# action variants (the Dockerfile and composite/action.yml) and of tests/packaging/test_lock_install.py.
#
#   packaging/install.sh PYTHON VENV [SOURCE]
#
# PYTHON makes VENV (when VENV does not exist yet); every dependency comes from packaging/requirements.lock with
# --require-hashes --no-deps --only-binary :all: (a file whose sha256 is not in the lock is refused, nothing is
# resolved, no sdist's build code runs). With SOURCE (a selfix checkout), selfix itself is then built from a
# temporary copy of it (the checkout stays as it was) offline, with the lock's setuptools (--no-build-isolation
# --no-index), and installed without dependencies. The project's own environment is never this one: the action
# makes that for setup_command (selfix_action/sandbox/setup.py), or it is the runner's (composite variant).
set -euo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 PYTHON VENV [SOURCE]" >&2
  exit 2
fi
python="$1" venv="$2" source="${3:-}"
lock="$(cd "$(dirname "$0")" && pwd)/requirements.lock"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# No pip inside selfix's environment (it needs none, and ensurepip is slow): the base interpreter's pip installs
# into it (--python, pip >= 22.3).
[[ -x "$venv/bin/python" ]] || "$python" -m venv --without-pip "$venv"
pip=("$python" -m pip --python "$venv/bin/python")
"${pip[@]}" install --quiet --require-hashes --no-deps --only-binary :all: -r "$lock"
if [[ -n "$source" ]]; then
  build="$(mktemp -d)"
  trap 'rm -rf "$build"' EXIT
  cp -R "$source/pyproject.toml" "$source/README.md" "$source/selfix_action" "$build/"
  find "$build" -name __pycache__ -prune -exec rm -rf {} +
  "${pip[@]}" install --quiet --no-deps --no-build-isolation --no-index "$build"
  "$venv/bin/selfix" --help >/dev/null  # the entry point runs: every import selfix needs at start is there
fi
