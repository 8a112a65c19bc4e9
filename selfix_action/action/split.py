"""Split-privilege mode: ``selfix heal`` (read-only job) writes a patch bundle; ``selfix publish`` (write job)
checks it and only then pushes and comments.

The heal job runs the project's code and the model with a read-only token and no write secrets; whatever it does,
all it can hand over is a bundle. The publish job runs no project code and no model. It trusts nothing in the
bundle: it re-checks every hash, that the patch applies cleanly on the recorded commit, that this commit is still
the head of the recorded branch, and that the diff (as git itself sees it, after applying) touches only allowed
paths, with the protected-path settings of its own checkout (the default branch), not the bundle's.

Bundle layout (one folder, uploaded as an artifact)::

    manifest.json   {"format", "repository", "base_sha", "branch", "default_branch", "pull_number", "fingerprint",
                     "status", "files": {name: sha256}}
    patch.diff      the verified patch (empty when not healed)
    report.json     the HealReport
    report.md       the same, rendered

The manifest is not signed: anyone who can replace the whole artifact can write a consistent one. The hashes catch
corruption and partial tampering; the checks above are what hold against a hostile heal job.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from selfix_action.action.events import CommentTrigger, Skip
from selfix_action.action.runner import ActionOutcome, ActionSteps, hint_of, plan_and_publish
from selfix_action.ci.gitops import Git, GitError, check_ref, check_sha, fingerprint
from selfix_action.errors import InputError
from selfix_action.heal import heal_status
from selfix_action.publish import render
from selfix_action.publish.policy import Target, opted_out, protected_patterns
from selfix_action.repair.loop import HealResult
from selfix_action.repair.paths import patch_violations
from selfix_action.repair.report import HealReport, StopReason, render_markdown

FORMAT = "selfix-bundle/1"
BUNDLE_FILES = ("patch.diff", "report.json", "report.md")
MAX_FILE_BYTES = 20 * 1024 * 1024
_REGULAR_MODES = frozenset({"100644", "100755"})


class BundleRefused(InputError):
    """The bundle failed a check; nothing was pushed or commented."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Bundle:
    root: Path
    repository: str
    base_sha: str
    branch: str
    default_branch: str
    pull_number: int | None
    fingerprint: str
    status: str
    diff: str
    report: HealReport


# -- heal side -------------------------------------------------------------------------------------------------
def write_bundle(
    root: Path,
    *,
    repository: str,
    target: Target,
    fp: str,
    status: str,
    result: HealResult,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    report = result.report
    contents = {
        "patch.diff": report.patch.diff if report.patch is not None else "",
        "report.json": report.model_dump_json(indent=2) + "\n",
        "report.md": render_markdown(report),
    }
    for name, text in contents.items():
        (root / name).write_text(text, encoding="utf-8")
    manifest = {
        "format": FORMAT,
        "repository": repository,
        "base_sha": target.sha,
        "branch": target.branch,
        "default_branch": target.default_branch,
        "pull_number": target.pull.number if target.pull is not None else None,
        "fingerprint": fp,
        "status": status,
        "files": {name: _sha256(root / name) for name in contents},
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return root


def heal_to_bundle(steps: ActionSteps, bundle_dir: Path) -> ActionOutcome:
    """``selfix heal``: the action's trigger handling and heal, then a bundle instead of publishing."""
    with steps.credentials_taken():
        return _heal_to_bundle(steps, bundle_dir)


def _heal_to_bundle(steps: ActionSteps, bundle_dir: Path) -> ActionOutcome:
    trigger, payload = steps.trigger()
    if isinstance(trigger, Skip):
        return ActionOutcome("skipped", notes=[trigger.reason])
    if isinstance(trigger, CommentTrigger):
        raise InputError("selfix heal does not handle comment commands (they need a write token); use selfix action")
    default_branch = str((payload.get("repository") or {}).get("default_branch") or "")
    located = steps.locator.locate(trigger, default_branch, payload)
    if isinstance(located, Skip):
        steps.log.line(f"selfix: skipped: {located.reason}")
        return ActionOutcome("skipped", notes=[located.reason])
    target, junit = located
    healed = steps.heal(junit, hint_of(trigger))
    if healed.paths is None:  # the JUnit reports show no failing test: nothing ran
        steps.summary("nothing_to_heal", healed, [])
        return ActionOutcome("nothing_to_heal", notes=[healed.report.explanation])
    status = healed.status
    fp = fingerprint(target.branch, healed.report.f2p_tests)
    write_bundle(
        bundle_dir, repository=steps.settings.repository, target=target, fp=fp, status=status, result=healed.result
    )
    steps.log.line(f"selfix: bundle written to {bundle_dir} (status {status}); nothing published")
    facts = [*render.isolation_lines(healed.report), f"Trigger: {trigger.name}", f"Failing branch: `{target.branch}`"]
    steps.summary(status, healed, [*facts, f"Bundle: `{bundle_dir}`"])
    return ActionOutcome.of(status, healed)


# -- publish side ----------------------------------------------------------------------------------------------
def load_bundle(root: Path) -> Bundle:
    """Read the bundle and check its manifest and hashes; BundleRefused on any mismatch."""
    manifest_path = root / "manifest.json"
    if not root.is_dir() or manifest_path.is_symlink() or not manifest_path.is_file():
        raise BundleRefused(f"{root} holds no manifest.json")
    if manifest_path.stat().st_size > 1024 * 1024:
        raise BundleRefused("manifest.json is too large")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise BundleRefused(f"manifest.json is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleRefused(f"not a {FORMAT} manifest")
    hashes = manifest.get("files")
    if not isinstance(hashes, dict) or set(hashes) != set(BUNDLE_FILES):
        raise BundleRefused(f"the manifest must list exactly {', '.join(BUNDLE_FILES)}")
    texts: dict[str, str] = {}
    for name in BUNDLE_FILES:
        path = root / name
        if path.is_symlink() or not path.is_file():
            raise BundleRefused(f"{name} is missing or not a regular file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise BundleRefused(f"{name} is too large")
        if not isinstance(hashes[name], str) or _sha256(path) != hashes[name]:
            raise BundleRefused(f"{name} does not match its sha256 in the manifest: the bundle was altered")
        texts[name] = path.read_text(encoding="utf-8")
    for key in ("repository", "base_sha", "branch", "default_branch", "fingerprint", "status"):
        if not isinstance(manifest.get(key), str):
            raise BundleRefused(f"manifest field {key!r} is missing or not a string")
    pull_number = manifest.get("pull_number")
    if pull_number is not None and (not isinstance(pull_number, int) or isinstance(pull_number, bool)):
        raise BundleRefused("manifest field 'pull_number' is not a number")
    try:
        report = HealReport.model_validate_json(texts["report.json"])
        base_sha = check_sha(manifest["base_sha"])
        branch = check_ref(manifest["branch"])
        default_branch = check_ref(manifest["default_branch"]) if manifest["default_branch"] else ""
    except (ValidationError, GitError) as exc:
        raise BundleRefused(f"the bundle is malformed: {exc}") from exc
    return Bundle(
        root=root,
        repository=manifest["repository"],
        base_sha=base_sha,
        branch=branch,
        default_branch=default_branch,
        pull_number=pull_number,
        fingerprint=manifest["fingerprint"],
        status=manifest["status"],
        diff=texts["patch.diff"],
        report=report,
    )


def apply_in_private_index(git: Git, base_sha: str, diff: str) -> tuple[dict[str, str], dict[str, str]]:
    """Apply ``diff`` to ``base_sha`` in a private index (never the working tree); (new texts, old texts) of the
    changed files, as git sees them. Refuses a patch that does not apply cleanly, deletes, renames, changes a
    mode, or creates anything but a regular file."""
    with tempfile.TemporaryDirectory(prefix="selfix-publish-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git.run("read-tree", base_sha, extra_env=env)
        try:
            git.run("apply", "--cached", "--check", "--whitespace=nowarn", input_text=diff, extra_env=env)
            git.run("apply", "--cached", "--whitespace=nowarn", input_text=diff, extra_env=env)
        except GitError as exc:
            raise BundleRefused(f"the patch does not apply cleanly on {base_sha[:12]}: {exc}") from exc
        raw = git.run("diff-index", "--cached", "--raw", "-z", "--no-renames", base_sha, extra_env=env)
        fields = raw.split("\0")
        files: dict[str, str] = {}
        originals: dict[str, str] = {}
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta:
                continue
            match = re.match(r"^:(\d{6}) (\d{6}) [0-9a-f]+ [0-9a-f]+ ([A-Z])", meta)
            if match is None:
                raise BundleRefused(f"cannot read git's view of the patch: {meta!r}")
            old_mode, new_mode, status = match.groups()
            if status not in ("A", "M") or new_mode not in _REGULAR_MODES or (status == "M" and old_mode != new_mode):
                raise BundleRefused(f"the patch {status}/{old_mode}->{new_mode} {path!r}: only edits and new files")
            files[path] = git.run("cat-file", "blob", f":{path}", extra_env=env)
            originals[path] = git.run("cat-file", "blob", f"{base_sha}:{path}") if status == "M" else ""
    if not files:
        raise BundleRefused("the patch changes nothing")
    return files, originals


def publish_bundle(steps: ActionSteps, root: Path) -> ActionOutcome:
    """``selfix publish BUNDLE``: verify the bundle, then plan and publish exactly as the action does."""
    with steps.credentials_taken():
        return _publish_bundle(steps, root)


def _publish_bundle(steps: ActionSteps, root: Path) -> ActionOutcome:
    settings = steps.settings
    bundle = load_bundle(root)
    if bundle.repository != settings.repository:
        raise BundleRefused(f"the bundle is for {bundle.repository!r}, this run is {settings.repository!r}")
    report = bundle.report
    # The bundle's own files, as `selfix action` names the report folder's: for the job's later steps.
    report_path = str((root / "report.md").resolve())
    patch_path = str((root / "patch.diff").resolve()) if bundle.diff.strip() else ""
    if heal_status(report, patched=False) == "nothing_to_heal" or bundle.status == "nothing_to_heal":
        steps.log.line("selfix: the bundle says there was nothing to heal; nothing to publish")
        return ActionOutcome("nothing_to_heal", report_path=report_path)
    git = steps.git
    git.ensure_commit(bundle.base_sha, bundle.branch)
    head = git.remote_branch_sha(bundle.branch)
    if head != bundle.base_sha:
        raise BundleRefused(
            f"{bundle.branch} moved since the heal job (now {str(head)[:12]}, bundle {bundle.base_sha[:12]}); "
            "not publishing a fix for an old commit"
        )
    files: dict[str, str] | None = None
    tracked = git.tracked_files(bundle.base_sha)
    if report.stop_reason is StopReason.HEALED:
        if report.patch is None or report.patch.diff != bundle.diff:
            raise BundleRefused("report.json and patch.diff disagree")
        files, _ = apply_in_private_index(git, bundle.base_sha, bundle.diff)
        if set(files) != set(report.patch.files):
            raise BundleRefused("the files the patch changes differ from the files the report lists")
        refused = patch_violations(files, tracked, protected_patterns(settings))
        if refused:
            raise BundleRefused(
                "the patch touches paths selfix may not change: " + ", ".join(f"{p} ({why})" for p, why in refused)
            )
    elif bundle.diff.strip():
        raise BundleRefused("a bundle that is not healed carries a patch")
    pull = steps.api.client.get_pull(bundle.pull_number) if bundle.pull_number is not None else None
    if pull is not None and pull.head_sha != bundle.base_sha:
        raise BundleRefused(f"pull request #{pull.number} moved since the heal job; not publishing")
    why = opted_out(settings, pull.labels, f"pull request #{pull.number}") if pull is not None else ""
    if why:  # labelled between the heal job and this one
        steps.log.line(f"selfix: skipped: {why}")
        return ActionOutcome("skipped", patch_path=patch_path, report_path=report_path, notes=[why])
    fork = pull is not None and pull.head_repo != settings.repository
    default_branch = _default_branch(settings.event_path) or bundle.default_branch
    target = Target(bundle.base_sha, bundle.branch, pull, fork, default_branch)
    fp = fingerprint(bundle.branch, report.f2p_tests)  # recomputed, not taken from the bundle
    outcome = ActionOutcome(
        heal_status(report, patched=files is not None),  # healed or not_healed
        patch_path=patch_path,
        report_path=report_path,
        cost_usd=render.cost_usd(report),
        tokens=render.tokens(report),
        confidence=render.confidence_output(report),
    )
    return plan_and_publish(steps, outcome, report, target, fp, files, fact=f"Bundle: `{root}`", tracked=tracked)


def _default_branch(event_path: Path | None) -> str:
    """The default branch from this job's own event payload (trusted), if it says."""
    if event_path is None or not event_path.is_file():
        return ""
    try:
        payload = json.loads(event_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return ""
    repo = payload.get("repository") if isinstance(payload, dict) else None
    branch = repo.get("default_branch") if isinstance(repo, dict) else None
    return branch if isinstance(branch, str) else ""
