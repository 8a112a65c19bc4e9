#!/usr/bin/env bash
# Regenerates packaging/serve/requirements.lock, the hashed lock of the `selfix serve` image
# (packaging/serve/Dockerfile): selfix's dependencies with the serve extra (Starlette, uvicorn) and the LLM extras
# (the local pool's heals), plus setuptools to build selfix offline. The same resolver and options as
# packaging/lock.sh, starting from the action's pins so both images move together.
#
#   packaging/serve/lock.sh              keep the current pins, add what a changed pyproject.toml needs
#   packaging/serve/lock.sh --upgrade    move every pin to the newest release
set -euo pipefail
cd "$(dirname "$0")/../.."
UV_VERSION=0.13.9
tool="$(mktemp -d)"
trap 'rm -rf "$tool"' EXIT
python3 -m venv "$tool/venv"
"$tool/venv/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
"$tool/venv/bin/uv" pip compile pyproject.toml packaging/build.in \
  --extra llm --extra serve --universal --python-version 3.11 --generate-hashes \
  --constraints packaging/requirements.lock \
  --custom-compile-command "packaging/serve/lock.sh" --output-file packaging/serve/requirements.lock "$@"
