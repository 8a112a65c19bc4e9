# selfix GitHub Action image: runs `selfix action` on the checked-out workspace.
FROM python:3.11.10-slim-bookworm

# git to fetch/commit/push; bubblewrap to isolate test runs where namespaces are allowed, libseccomp for the
# namespace-free landlock level (what works in Docker's default container), util-linux for setpriv (drops root to
# the sandbox uid inside bwrap) and unshare. See selfix_action/sandbox/isolation.py.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        git=1:2.39.* \
        bubblewrap=0.8.* \
        libseccomp2=2.5.* \
        util-linux=2.38.* \
        ca-certificates=20230311* \
    && rm -rf /var/lib/apt/lists/*

# The package, installed from this repository (the action's own checkout).
WORKDIR /opt/selfix
COPY pyproject.toml README.md ./
COPY selfix_action ./selfix_action
RUN pip install --no-cache-dir .

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# No USER and no extra user: the entrypoint runs as root because GitHub mounts the workspace for root and selfix
# commits there. Under bwrap, setpriv drops every test run to uid/gid 65534 (nobody, already in the base image,
# owns no file) with no groups and no capabilities (IsolationConfig.sandbox_uid). bwrap needs namespaces that a
# runner's Docker forbids by default; then the landlock level confines each run (Landlock, seccomp, uid 65534).
# The action fails closed: no isolation only with `isolation: none`. The job summary names the level.
ENTRYPOINT ["selfix", "action"]
