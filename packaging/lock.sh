#!/usr/bin/env bash
# Regenerates packaging/requirements.lock, the hashed lock that both action variants install selfix from
# (Dockerfile, composite/action.yml, through packaging/install.sh): every dependency of selfix, the LLM extras
# (anthropic, openai) and setuptools (selfix's own build backend, so selfix installs with --no-build-isolation and
# nothing unhashed is ever downloaded), pinned with the sha256 of every file PyPI has for that version.
# One universal resolution for Python >= 3.11 (requires-python) on every platform: the image's Python 3.12 and the
# composite variant's both find their wheels in it.
#
#   packaging/lock.sh              keep the current pins, add what a changed pyproject.toml needs
#   packaging/lock.sh --upgrade    move every pin to the newest release (the scheduled refresh does this)
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9  # the resolver; a newer uv may write the file differently, so it is pinned too
tool="$(mktemp -d)"
trap 'rm -rf "$tool"' EXIT
python3 -m venv "$tool/venv"
"$tool/venv/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
"$tool/venv/bin/uv" pip compile pyproject.toml packaging/build.in \
  --extra llm --universal --python-version 3.11 --generate-hashes \
  --custom-compile-command "packaging/lock.sh" --output-file packaging/requirements.lock "$@"
