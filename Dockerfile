# selfix GitHub Action image: runs `selfix action` on the checked-out workspace.
FROM python:3.11.10-slim-bookworm

# git to fetch/commit/push, bubblewrap to isolate test runs (see docs/SECURITY.md).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git=1:2.39.* bubblewrap=0.8.* ca-certificates=20230311* \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/selfix
COPY pyproject.toml README.md ./
COPY selfix_action ./selfix_action
RUN pip install --no-cache-dir . \
    && useradd --create-home --uid 10001 selfix-runner

# A non-root user for running project code (the sandbox drops to it); the entrypoint stays uid 0 because
# GitHub mounts the workspace for root and selfix must write its branch there.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

ENTRYPOINT ["selfix", "action"]
