"""``selfix serve``: a webhook receiver (GitHub ``workflow_run`` and ``issue_comment``, Sentry issue alerts, a
generic signed error) that stores each signal durably, deduplicates it by fingerprint and hands the heal to GitHub
Actions (``workflow_dispatch``) or a local worker pool. It never runs project code itself.

A front end beside ``action/``, ``gitlab_ci/`` and ``mcp_server/``; the only package that imports Starlette and
uvicorn (the ``serve`` extra).
"""
