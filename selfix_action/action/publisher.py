"""The one place the action writes to GitHub or pushes to origin: it carries out ``PublishPlan`` values.

Comments go into one tracking comment per pull request (or commit), edited rather than reposted, so a run
never spams; a push that is refused (a moved branch, a branch selfix did not create) falls back to a comment.
A rerun of the same failure is quiet in every mode: the fix PR is updated (CI is not started again for a fix the
branch already holds), a commit already on the branch is not pushed again, the one review per failure is left
alone or updated, the comment or issue is edited. The loop guards live here too: at ``max_open_prs`` open fix PRs a
new fix is a comment, not a PR; selfix's own PR or issue with the ``opt_out_label`` is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from selfix_action.action.api import Api
from selfix_action.action.log import Log
from selfix_action.action.settings import Settings
from selfix_action.ci.gitops import BRANCH_PREFIX, Git, PushRefused, fix_branch, push_fix_branch, push_onto_branch
from selfix_action.errors import SelfixError
from selfix_action.github.client import CommentInfo, GitHubClient
from selfix_action.github.errors import GitHubError
from selfix_action.publish import render
from selfix_action.publish.policy import Action, PublishPlan, Target, opted_out

CI_HEADING = "**CI on this branch:**"
CI_STARTED = "selfix started the failed workflow again here"


@dataclass
class Published:
    pr_url: str = ""
    issue_url: str = ""  # the escalation issue of a failure without a pull request
    notes: list[str] = field(default_factory=list)


class Publisher:
    def __init__(self, settings: Settings, api: Api, git: Git, log: Log) -> None:
        self.settings = settings
        self.api = api
        self.git = git
        self.log = log
        self.tracking: CommentInfo | None = None  # the tracking comment of a /selfix command, once posted

    @property
    def can_publish(self) -> bool:
        return self.api.available

    @property
    def client(self) -> GitHubClient:
        return self.api.client

    # -- the tracking comment of a /selfix command ---------------------------------------------------------
    def react(self, comment_id: int, content: str) -> None:
        self.client.react_to_comment(comment_id, content)

    def track(self, number: int, body: str) -> None:
        """Post or edit the tracking comment on pull request ``number``."""
        self.tracking = self.client.upsert_issue_comment(
            number, render.comment_marker(number), body, known=self.tracking
        )

    def comment(self, target: Target, body: str) -> None:
        """The one comment of this run: the PR's tracking comment, else a comment on the failing commit."""
        if not self.can_publish:
            self.log.line("selfix: no github_token: not commenting")
            return
        if target.pull is not None:
            self.track(target.pull.number, body)
        else:
            self.client.upsert_commit_comment(target.sha, render.comment_marker(target.sha), body)

    def report_error(self, exc: SelfixError) -> None:
        """Best effort: say in the tracking comment that the run failed (never raises)."""
        if self.tracking is None or not self.api.created:
            return
        try:
            number = int(self.tracking.body.split("selfix:tracking ", 1)[1].split(" ", 1)[0])
            self.api.client.upsert_issue_comment(
                number,
                render.comment_marker(number),
                f"## selfix: error\n\n{render.clean(str(exc), 500)}",
                known=self.tracking,
            )
        except (SelfixError, IndexError, ValueError):
            pass

    # -- plans ---------------------------------------------------------------------------------------------
    def publish(self, plan: PublishPlan, target: Target, files: Mapping[str, str] | None) -> Published:
        done = Published(notes=list(plan.notes))
        if plan.action is Action.NOTHING:
            if plan.body and self.tracking is not None and target.pull is not None:
                self.track(target.pull.number, plan.body)
            return done
        if plan.action is Action.ESCALATE and target.pull is None and self.can_publish:
            self._escalation_issue(plan, target, done)
            return done
        if plan.action in (Action.ESCALATE, Action.REPORT):
            self.comment(target, plan.body)
            return done
        assert files is not None
        try:
            if plan.action is Action.OPEN_PR:
                self._open_pr(plan, target, files, done)
            elif plan.action is Action.COMMIT:
                assert target.pull is not None
                pushed = push_onto_branch(
                    self.git,
                    branch=target.branch,
                    base_sha=target.sha,
                    files=files,
                    message=plan.commit_message,
                    fp=plan.fingerprint,
                    protected=plan.protected_branches,
                )
                done.pr_url = target.pull.html_url
                if not pushed.pushed:
                    done.notes.append(f"{target.branch} already holds this fix (commit {pushed.sha[:12]}); not pushed")
                self.comment(target, f"## selfix: pushed a fix to `{target.branch}`\n\nCommit {pushed.sha[:12]}.")
            elif plan.action is Action.SUGGEST:
                assert target.pull is not None
                self._suggest(plan, target, done)
                done.pr_url = target.pull.html_url
        except PushRefused as exc:
            done.notes.append(f"not pushed: {exc}")
            self.comment(target, plan.fallback_body + f"\n\nNot pushed: {exc}")
        return done

    def _suggest(self, plan: PublishPlan, target: Target, done: Published) -> None:
        """One review per failure fingerprint: posted once, left alone by a rerun with the same suggestions, and
        marked outdated (the current patch in the comment) by one with other suggestions, never a second one."""
        assert target.pull is not None
        number = target.pull.number
        marker = render.review_marker(plan.fingerprint, plan.suggestions)
        existing = self.client.find_review(number, render.review_marker_prefix(plan.fingerprint))
        if existing is not None and marker in existing.body:
            done.notes.append(f"the same suggestions are already posted (review {existing.id}); left alone")
            self.comment(target, "## selfix: fix posted as review suggestions\n\n" + plan.title)
            return
        if existing is not None:
            kept = render.marker_line(existing.body, render.review_marker_prefix(plan.fingerprint))
            outdated = render.outdated_review_body(plan.title, target.sha)
            self.client.edit_review(number, existing.id, f"{outdated}\n\n{kept}\n")
            done.notes.append(f"review {existing.id} holds older suggestions for this failure: marked outdated")
            self.comment(target, plan.fallback_body)
            return
        try:
            self.client.create_review(number, target.sha, plan.title, list(plan.suggestions), marker=marker)
            self.comment(target, "## selfix: fix posted as review suggestions\n\n" + plan.title)
        except GitHubError as exc:
            # GitHub only accepts suggestions on lines in the PR's diff; fall back to the patch itself.
            done.notes.append(f"suggestions refused ({exc.status}); posted the patch as a comment")
            self.comment(target, plan.fallback_body)

    def _at_pr_cap(self, target: Target, plan: PublishPlan, done: Published) -> bool:
        """At ``max_open_prs`` open selfix PRs: the fix goes into one comment (edited by later runs) instead."""
        cap = self.settings.max_open_prs
        if cap <= 0:
            return False
        open_fixes = self.client.open_pulls_from(BRANCH_PREFIX)
        if len(open_fixes) < cap:
            return False
        why = f"{len(open_fixes)} selfix fix PRs are open, at the cap max_open_prs={cap}"
        self.log.line(f"selfix: not opening a fix PR: {why}")
        done.notes.append(f"no fix PR opened: {why}; the fix is in a comment")
        body = render.pr_cap_body(open_pulls=[p.number for p in open_fixes], cap=cap, patch_body=plan.fallback_body)
        self.comment(target, body)
        return True

    def _open_pr(self, plan: PublishPlan, target: Target, files: Mapping[str, str], done: Published) -> None:
        existing = self.client.find_open_pull(fix_branch(plan.fingerprint))
        if existing is not None:
            why = opted_out(self.settings, existing.labels, f"the fix PR #{existing.number}")
            if why:
                self.log.line(f"selfix: left alone: {why}")
                done.notes.append(f"left alone: {why}")
                if self.tracking is not None and target.pull is not None:  # a /selfix command waits for an answer
                    self.track(
                        target.pull.number, f"## selfix: left alone\n\n{why}: remove it to let selfix update it."
                    )
                return
        elif self._at_pr_cap(target, plan, done):
            return
        pushed = push_fix_branch(
            self.git,
            fp=plan.fingerprint,
            base_sha=target.sha,
            files=files,
            message=plan.commit_message,
            protected=plan.protected_branches,
        )
        ci_at = existing.body.find(CI_HEADING) if existing is not None else -1
        if existing is not None and not pushed.pushed and ci_at >= 0 and CI_STARTED in existing.body[ci_at:]:
            # A rerun: the branch already holds this fix and its CI run was started; starting another is noise.
            ci = existing.body[ci_at:]
            done.notes.append(f"{pushed.branch} already holds this fix: its CI run is not started again")
        else:
            ci = self._ci_on_fix_branch(plan, pushed.branch, done)
        body = plan.body + "\n\n" + ci
        if existing is not None:
            pull = self.client.update_pull(existing.number, title=plan.title, body=body)
            done.notes.append(f"updated the existing fix PR #{pull.number}")
        else:
            pull = self.client.create_pull(
                base=target.branch, head=pushed.branch, title=plan.title, body=body, draft=plan.draft
            )
            self.client.add_labels(pull.number, list(plan.labels))
        done.pr_url = pull.html_url
        if target.pull is not None:
            self.comment(target, f"## selfix: fix proposed in #{pull.number}\n\n{plan.title}")

    def _escalation_issue(self, plan: PublishPlan, target: Target, done: Published) -> None:
        """One issue per failure fingerprint; a token without ``issues: write`` (or issues turned off) falls back
        to the comment on the failing commit."""
        marker = render.escalation_marker(plan.fingerprint)
        try:
            existing = self.client.find_issue(marker)
            what = f"the escalation issue #{existing.number}" if existing is not None else ""
            why = opted_out(self.settings, existing.labels, what) if existing is not None else ""
            if why:
                self.log.line(f"selfix: left alone: {why}")
                done.notes.append(f"left alone: {why}")
                return
            if existing is not None:
                issue = self.client.edit_issue(existing, marker, plan.title, plan.body)
            else:
                issue = self.client.open_issue(marker, plan.title, plan.body)
        except GitHubError as exc:
            done.notes.append(f"could not open an escalation issue ({exc}); commented on the commit instead")
            self.comment(target, plan.body)
            return
        done.issue_url = issue.html_url
        verb = "opened" if issue.created else "updated"
        done.notes.append(f"{verb} the escalation issue #{issue.number}: {issue.html_url}")

    def _ci_on_fix_branch(self, plan: PublishPlan, branch: str, done: Published) -> str:
        """Start the failed workflow on the fix branch (a push made with GITHUB_TOKEN starts none) and say in the
        PR which run verifies it, or why no run does."""
        runs_of_branch = f"{self.settings.server_url}/{self.settings.repository}/actions?query=branch%3A{branch}"
        if plan.ci_workflow_id is None:
            return (
                "**CI on this branch:** none started by selfix: a push made with the workflow's `GITHUB_TOKEN` starts "
                "no workflow, so checks appear only after a push by someone else (or with a GitHub App token, see "
                "the docs)."
            )
        try:
            run_url = self.client.dispatch_workflow(plan.ci_workflow_id, branch)
        except GitHubError as exc:
            why = {
                403: "the token needs `actions: write`",
                404: "the workflow was not found",
                422: "the workflow has no `workflow_dispatch` trigger",
            }.get(exc.status or 0, str(exc))
            done.notes.append(f"CI not started on {branch}: {why}")
            return f"**CI on this branch:** could not start the failed workflow here ({why}); see the docs."
        done.notes.append(f"started the failed workflow on {branch}: {run_url or runs_of_branch}")
        link = f"[this run]({run_url})" if run_url else f"[the runs of `{branch}`]({runs_of_branch})"
        return f"{CI_HEADING} {CI_STARTED}: {link} verifies this fix."
