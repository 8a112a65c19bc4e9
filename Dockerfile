# selfix GitHub Action image: runs `selfix action` on the checked-out workspace.
#
# The same image every build: the base is pinned by the digest of its multi-platform manifest list (the tag only
# names it; .github/workflows/refresh-lock.yml moves the digest), and every Python package comes from the hashed lock
# packaging/requirements.lock (packaging/lock.sh regenerates it). Released action.yml files do not build this:
# they run the image the release workflow pushed to ghcr.io (docs/ACTION.md, "Releases").
# Python 3.12.7 at this digest.
FROM python:3.12-slim-bookworm@sha256:032c52613401895aa3d418a4c563d2d05f993bc3ecc065c8f4e2280978acd249

# git to fetch/commit/push; bubblewrap to isolate test runs where namespaces are allowed, libseccomp for the
# namespace-free landlock level (what works in Docker's default container), util-linux for setpriv (drops root to
# the sandbox uid inside bwrap) and unshare. See selfix_action/sandbox/isolation.py.
# No version pins: an exact pin breaks the build as soon as Debian moves the package (the old version leaves the
# mirror and apt refuses a downgrade), and bookworm's stable and security updates bring only fixes.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        git \
        bubblewrap \
        libseccomp2 \
        util-linux \
        ca-certificates \
    && rm -rf /var/lib/apt/lists/*

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# selfix in a virtual environment of its own, /opt/selfix/venv: the dependencies first (their own layer, rebuilt
# only when the lock changes), then selfix from this checkout. A project's setup_command never installs here: it
# gets a fresh environment of the project's own (selfix_action/sandbox/setup.py).
COPY packaging/install.sh packaging/requirements.lock /opt/selfix/src/packaging/
RUN /opt/selfix/src/packaging/install.sh /usr/local/bin/python3 /opt/selfix/venv
COPY pyproject.toml README.md /opt/selfix/src/
COPY selfix_action /opt/selfix/src/selfix_action
RUN /opt/selfix/src/packaging/install.sh /usr/local/bin/python3 /opt/selfix/venv /opt/selfix/src \
    && rm -rf /opt/selfix/src

# `python` is selfix's environment's interpreter (a venv of the image's Python 3.12): the action's default test
# command `python -m pytest` without setup_command, and the interpreter setup_command's project environment is made
# from. The project's Python version in this variant is the image's; the composite variant (composite/action.yml)
# runs on the runner with whatever Python the workflow set up.
ENV PATH=/opt/selfix/venv/bin:$PATH

# No USER and no extra user: the entrypoint runs as root because GitHub mounts the workspace for root and selfix
# commits there. Under bwrap, setpriv drops every test run to uid/gid 65534 (nobody, already in the base image,
# owns no file) with no groups and no capabilities (IsolationConfig.sandbox_uid). bwrap needs namespaces that a
# runner's Docker forbids by default; then the landlock level confines each run (Landlock, seccomp, uid 65534).
# The action fails closed: no isolation only with `isolation: none`. The job summary names the level.
ENTRYPOINT ["/opt/selfix/venv/bin/selfix", "action"]
