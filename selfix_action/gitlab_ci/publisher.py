"""The only code of the GitLab front end that pushes or writes to GitLab: carries out a ``PublishPlan``.

A verified fix: the branch ``selfix/<fingerprint>`` pushed (``gitops.push_fix_branch``: never the failing or the
default branch, never a branch selfix did not create) and one merge request into the failing branch, a draft one
level below ``pr_confidence``; a rerun finds the open one and edits it. Anything else that is said (not healed, a
patch held back below the draft level, report mode, a refused push) is one note per failure fingerprint, on the
merge request of the pipeline if there is one, else on the failing commit, edited by later runs and never posted
twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from selfix_action.ci.gitops import Git, PushRefused, fix_branch, push_fix_branch
from selfix_action.gitlab.client import GitLabClient
from selfix_action.gitlab_ci.settings import TOKEN_VARIABLE, GitLabSettings
from selfix_action.publish import render
from selfix_action.publish.policy import Action, PublishPlan, Target, opted_out


@dataclass
class Published:
    mr_url: str = ""
    note: str = ""  # where the note went ("merge request !3", "commit 0123abcd...")
    notes: list[str] = field(default_factory=list)


class GitLabPublisher:
    def __init__(
        self, settings: GitLabSettings, client: GitLabClient | None, git: Git, log: Callable[[str], None]
    ) -> None:
        self.settings = settings
        self.client = client  # None without a token: nothing is published
        self.git = git
        self.log = log

    @property
    def can_publish(self) -> bool:
        return self.client is not None

    def publish(self, plan: PublishPlan, target: Target, files: Mapping[str, str] | None) -> Published:
        done = Published(notes=list(plan.notes))
        if plan.action is Action.NOTHING:
            return done
        if self.client is None:
            done.notes.append(f"no {TOKEN_VARIABLE}: nothing published")
            return done
        if plan.action is Action.OPEN_PR:
            assert files is not None
            try:
                self._open_mr(self.client, plan, target, files, done)
            except PushRefused as exc:
                done.notes.append(f"not pushed: {exc}")
                self._note(self.client, target, plan, plan.fallback_body + f"\n\nNot pushed: {exc}", done)
            return done
        # ESCALATE and REPORT (COMMIT and SUGGEST need a merge request of the failing branch the policy is not
        # given: a fix goes through a merge request of its own, never onto the failing branch).
        self._note(self.client, target, plan, plan.body or plan.fallback_body, done)
        return done

    def _note(self, client: GitLabClient, target: Target, plan: PublishPlan, body: str, done: Published) -> None:
        marker = render.escalation_marker(plan.fingerprint)
        iid = self.settings.mr_iid
        if iid is not None:
            client.upsert_mr_note(iid, marker, body)
            done.note = f"merge request !{iid}"
        else:
            client.upsert_commit_note(target.sha, marker, body)
            done.note = f"commit {target.sha[:12]}"
        done.notes.append(f"one note for this failure on {done.note}")

    def _open_mr(
        self, client: GitLabClient, plan: PublishPlan, target: Target, files: Mapping[str, str], done: Published
    ) -> None:
        branch = fix_branch(plan.fingerprint)
        existing = client.find_open_merge_request(branch)
        if existing is not None:
            why = opted_out(self.settings.options, existing.labels, f"the fix merge request !{existing.iid}")
            if why:
                self.log(f"selfix: left alone: {why}")
                done.notes.append(f"left alone: {why}")
                return
        pushed = push_fix_branch(
            self.git,
            fp=plan.fingerprint,
            base_sha=target.sha,
            files=files,
            message=plan.commit_message,
            protected=plan.protected_branches,
        )
        if not pushed.pushed:
            done.notes.append(f"{pushed.branch} already holds this fix (commit {pushed.sha[:12]}); not pushed")
        if existing is not None:
            mr = client.update_merge_request(existing.iid, title=plan.title, description=plan.body, draft=plan.draft)
            done.notes.append(f"updated the existing fix merge request !{mr.iid}")
        else:
            mr = client.create_merge_request(
                source=pushed.branch,
                target=target.branch,
                title=plan.title,
                description=plan.body,
                draft=plan.draft,
                labels=plan.labels,
            )
        done.mr_url = mr.web_url
        if self.settings.mr_iid is not None:  # the failing merge request hears where its fix is
            client.upsert_mr_note(
                self.settings.mr_iid,
                render.escalation_marker(plan.fingerprint),
                f"## selfix: fix proposed in !{mr.iid}\n\n{plan.title}\n\n{mr.web_url}",
            )
