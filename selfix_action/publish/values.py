"""The values a forge's publisher shares: the change request a failure is on (a GitHub pull request, a GitLab
merge request), a review suggestion, the modes and per-path rules of the options, and label hygiene. Plain data;
imports nothing of selfix."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class PullInfo:
    number: int
    html_url: str
    state: str
    title: str
    body: str
    head_ref: str
    head_sha: str
    head_repo: str  # owner/name of the head repository ("" when it was deleted)
    base_ref: str
    draft: bool = False
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReviewSuggestion:
    path: str
    start_line: int
    line: int
    body: str


class Mode(StrEnum):
    PR = "pr"  # open (or update) a fix PR into the failing branch
    COMMIT = "commit"  # push the fix onto the failing PR's own branch
    SUGGEST = "suggest"  # post the fix as review suggestions on the PR
    REPORT = "report"  # only comment


class PathRule(BaseModel):
    """A rule for patches touching files that match ``paths`` (globs, repo-relative)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: tuple[str, ...] = Field(min_length=1, description="globs, e.g. 'src/payments/**'")
    protected: bool = Field(False, description="never edit these files")
    mode: Mode | None = Field(None, description="publish a patch touching these files in this mode instead")
    labels: tuple[str, ...] = Field((), description="extra labels for a PR touching these files")


def trusted_labels(labels: Iterable[str]) -> list[str]:
    """Labels are user-configured; drop empties and duplicates, keep order."""
    seen: dict[str, None] = {}
    for label in labels:
        if label.strip():
            seen.setdefault(label.strip(), None)
    return list(seen)
