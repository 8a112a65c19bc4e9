"""From the event to what is healed: the failing commit (checked out, detached), its pull request, where a fix
goes, and the JUnit reports of the failed run (the run's artifacts, or files in the workspace)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfix_action.action.api import Api
from selfix_action.action.events import DispatchTrigger, Skip, StepTrigger, Trigger, WorkflowRunTrigger
from selfix_action.action.log import Log
from selfix_action.action.settings import Settings
from selfix_action.ci.gitops import Git, check_ref
from selfix_action.errors import InputError
from selfix_action.github.client import PullInfo
from selfix_action.github.errors import ArtifactRefused
from selfix_action.junit import find_reports
from selfix_action.publish.policy import Target, opted_out

MAX_JUNIT_FILES = 200


class Locator:
    def __init__(self, settings: Settings, api: Api, git: Git, log: Log) -> None:
        self.settings = settings
        self.api = api  # read only: locating writes nothing to GitHub
        self.git = git
        self.log = log

    def locate(
        self, trigger: Trigger, default_branch: str, payload: dict[str, Any]
    ) -> tuple[Target, tuple[Path, ...]] | Skip:
        """The target and its JUnit files for a workflow_run, workflow_dispatch or failed-step trigger; a Skip when
        the failing pull request carries the opt-out label (found before anything is downloaded or checked out)."""
        if isinstance(trigger, WorkflowRunTrigger):
            fork = bool(trigger.head_repo) and trigger.head_repo != self.settings.repository
            pull = self._pull_for(trigger.pull_numbers, trigger.head_sha)
            if skip := self._opted_out(pull):
                return skip
            target = Target(trigger.head_sha, trigger.head_branch, pull, fork, default_branch, trigger.workflow_id)
            junit = self._artifact_junit(trigger.run_id)
            self.git.ensure_commit(target.sha, "" if fork else target.branch)
            self.git.checkout_detached(target.sha)
            return target, junit
        if isinstance(trigger, DispatchTrigger):
            branch = check_ref(trigger.ref.removeprefix("refs/heads/"))
            sha = self.git.remote_branch_sha(branch)
            if sha is None:
                raise InputError(f"workflow_dispatch ref {branch!r} is not a branch on origin")
            pull = self._pull_for((), sha)
            if skip := self._opted_out(pull):
                return skip
            self.git.ensure_commit(sha, branch)
            self.git.checkout_detached(sha)
            return Target(sha, branch, pull, False, default_branch), self._local_junit()
        assert isinstance(trigger, StepTrigger)
        head = self.git.head()
        pr = payload.get("pull_request") if isinstance(payload.get("pull_request"), dict) else None
        fork = False
        notes_sha = head
        if pr is not None:
            head_repo = str(((pr.get("head") or {}).get("repo") or {}).get("full_name") or "")
            fork = head_repo != self.settings.repository
            pr_head = str((pr.get("head") or {}).get("sha") or "")
            if pr_head and pr_head != head:
                # The checkout is GitHub's merge commit: a patch based on it cannot go onto the PR branch.
                self.log.line("selfix: the checkout is a merge commit, not the PR head: report mode")
                fork = True
            notes_sha = pr_head or head
        pull = self._pull_for((int(pr["number"]),) if pr and isinstance(pr.get("number"), int) else (), notes_sha)
        if skip := self._opted_out(pull):
            return skip
        return Target(head, trigger.branch, pull, fork, default_branch), self._local_junit()

    def for_pull(self, pull: PullInfo, default_branch: str) -> Target:
        """A ``/selfix`` command's target: the PR's head, checked out (no JUnit: selfix runs the suite)."""
        target = Target(
            sha=pull.head_sha,
            branch=pull.head_ref,
            pull=pull,
            fork=pull.head_repo != self.settings.repository,
            default_branch=default_branch,
        )
        self.git.ensure_commit(target.sha, target.branch if not target.fork else "")
        self.git.checkout_detached(target.sha)
        return target

    def _opted_out(self, pull: PullInfo | None) -> Skip | None:
        why = opted_out(self.settings, pull.labels, f"pull request #{pull.number}") if pull is not None else ""
        return Skip(why) if why else None

    def _pull_for(self, numbers: Sequence[int], sha: str) -> PullInfo | None:
        if not self.api.available:
            return None
        if numbers:
            return self.api.client.get_pull(numbers[0])
        pulls = self.api.client.pulls_for_commit(sha)
        return pulls[0] if pulls else None

    def _local_junit(self) -> tuple[Path, ...]:
        return find_reports(self.settings.workspace, self.settings.junit_paths, MAX_JUNIT_FILES)

    def _artifact_junit(self, run_id: int) -> tuple[Path, ...]:
        if not self.api.available:
            return ()
        client = self.api.client
        dest_root = Path(tempfile.mkdtemp(prefix="selfix-artifacts-", dir=self.settings.temp_dir))
        found: list[Path] = []
        with self.log.group("selfix: JUnit artifacts"):
            for artifact in client.run_artifacts(run_id, self.settings.junit_artifact):
                try:
                    files = client.download_artifact(artifact, dest_root / str(artifact.id))
                except ArtifactRefused as exc:
                    self.log.note("::warning::selfix refused artifact: ", str(exc))
                    continue
                xml = [f for f in files if f.suffix.lower() == ".xml"]
                self.log.note("artifact ", f"{artifact.name}: {len(xml)} XML file(s)")
                found += xml
        return tuple(found[:MAX_JUNIT_FILES])
