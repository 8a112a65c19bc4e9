"""Template priors learned from real bugs' fixes: which repair templates reproduce the edits developers made.

For every training bug (a BugsInPy bug of a project with a local mirror that is *not* one of the real-bug
benchmark's tasks, and not of the five projects kept aside), every code hunk of the developers' fix is turned into
a target (the buggy file with that hunk alone applied) and the offline engine's templates are run at the hunk's
lines of the buggy file. A template *reproduces* the hunk when one of its candidates has the target's syntax tree.
No test runs: the figures depend on the fixes only, never on the machine's load.

    python -m selfix_bench.priors --bugsinpy <BugsInPy checkout> --mirror-dir <mirrors> \\
        --out bench/realbugs/priors.json

A template's learned prior is its share of the hunks (a hunk several templates reproduce is shared among them),
smoothed (add one half) and put on the scale of the hand priors: ``k * share``, where ``k`` is the geometric mean
of ``prior / share`` over the old families the fixes credited, so a new family stands against the old ones as the
real fixes say (capped at the highest hand prior).
The pair template's share is the bugs whose fix is exactly two code hunks that single templates reproduce.
Only the families added for real bugs (``LEARNED``) take the learned value; the others keep theirs (the mutant
tasks' learned order was fitted with them), and their measured shares are reported beside them.

The string template needs the failing assertion's compared strings; here each pair of string literals that differ
between the buggy and the target statement stands in for them (the family's best case, said in the output).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import math
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfix_action.errors import InputError
from selfix_action.offline.templates import Hints, candidate_edits, registry
from selfix_bench import realbugs

# The families added for real bugs (issue 14) and for the kinds an adopter's first week showed missing (issue 22):
# the ones whose prior this module learns.
LEARNED = (
    "unbound_name",
    "keyword_add",
    "sibling_method",
    "none_guard",
    "string_edit",
    "literal_to_name",
    "key_replace",
    "none_check",
    "field_swap",
    "none_test",
)
PAIR = "edit_pair"
KEPT_ASIDE = realbugs.EXCLUDED_PROJECTS
MAX_HUNK_LINES = 6  # a one-statement template cannot reproduce a longer hunk; not even tried
SMOOTHING = 0.5
MAX_PRIOR = 0.9  # the highest hand prior (name_replace)


@dataclass
class HunkResult:
    path: str
    lines: tuple[int, ...]  # 1-based lines of the buggy file the templates were run at
    templates: tuple[str, ...]  # the templates whose candidates reproduce the hunk


@dataclass
class BugResult:
    bug: str  # "project/number"
    hunks: list[HunkResult] = field(default_factory=list)
    skipped: str = ""  # why the bug has no hunks (no Python fix, a fix file that does not parse...)

    @property
    def single(self) -> tuple[str, ...]:
        """Templates that fix the whole bug with one edit (a fix of one code hunk they reproduce)."""
        return self.hunks[0].templates if len(self.hunks) == 1 else ()

    @property
    def pair(self) -> bool:
        return len(self.hunks) == 2 and all(h.templates for h in self.hunks)


def _dump(source: str) -> str | None:
    try:
        return ast.dump(ast.parse(source))
    except SyntaxError:
        return None


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def code_hunks(buggy: str, fixed: str) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(target text, buggy lines to try) for every hunk of ``buggy`` -> ``fixed`` that changes code (a hunk that
    changes only comments, blank lines or docstrings is no repair)."""
    before, after = buggy.splitlines(keepends=True), fixed.splitlines(keepends=True)
    base = _units(buggy)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        target = "".join(before[:i1] + after[j1:j2] + before[i2:])
        units = _units(target)
        if units is not None and units == base:
            continue
        # An insertion is tried at its neighbours (a guard goes before the line it protects).
        lines = tuple(range(i1 + 1, i2 + 1)) if i2 > i1 else tuple(n for n in (i1, i1 + 1) if 1 <= n <= len(before))
        yield target, lines


def _units(source: str) -> dict[str, str] | None:
    try:
        return realbugs.code_units(source)
    except SyntaxError:
        return None


def reproducing_templates(buggy: str, target: str, path: str, lines: Sequence[int], hints: Hints) -> tuple[str, ...]:
    """The templates with a candidate at ``lines`` of ``buggy`` whose syntax tree is ``target``'s."""
    wanted = _dump(target)
    if wanted is None or not lines or len(lines) > MAX_HUNK_LINES:
        return ()
    # The string family's evidence: literals the hunk changes, as if a failing assertion had compared them.
    old, new = set(_strings(ast.parse(buggy))), set(_strings(ast.parse(target)))
    compared = tuple((a, b) for a in sorted(old - new) for b in sorted(new - old))[:6]
    hints = Hints(compared=compared, read_file=hints.read_file, list_files=hints.list_files)
    found = {
        edit.template for edit in candidate_edits(buggy, path, list(lines), hints=hints) if edit.normalized == wanted
    }
    return tuple(sorted(found))


class _Tree:
    """The buggy commit's Python files, read from the bare clone on demand (the families' read_file/list_files)."""

    def __init__(self, bare: Path, commit: str) -> None:
        self.bare, self.commit = bare, commit
        self._paths: list[str] | None = None
        self._texts: dict[str, str | None] = {}

    def list_files(self) -> list[str]:
        if self._paths is None:
            out = realbugs._git(["ls-tree", "-r", "--name-only", self.commit], cwd=self.bare).decode()
            self._paths = [p for p in out.splitlines() if p.endswith(".py")]
        return self._paths

    def read_file(self, path: str) -> str | None:
        if path not in self._texts:
            data = realbugs.file_at(self.bare, self.commit, path)
            self._texts[path] = data.decode("utf-8", errors="replace") if data is not None else None
        return self._texts[path]


def analyse_bug(project: str, number: int, info: dict[str, str], url: str, test_dirs: Sequence[str]) -> BugResult:
    bug = BugResult(f"{project}/{number}")
    source = {"url": url, "buggy_commit": info["buggy_commit_id"], "fixed_commit": info["fixed_commit_id"]}
    try:
        bare = realbugs.git_cache(source)
        paths = realbugs.changed_paths(bare, source["buggy_commit"], source["fixed_commit"])
    except InputError as exc:
        bug.skipped = f"git: {exc}"
        return bug
    listed = [t.strip() for t in info.get("test_file", "").split(";") if t.strip()]
    fix_paths = [
        p
        for p in paths
        if p.endswith(".py") and not realbugs.is_test_path(p, test_dirs, listed) and not realbugs.is_doc_path(p)
    ]
    if not fix_paths:
        bug.skipped = "no Python source file in the fix"
        return bug
    tree = _Tree(bare, source["buggy_commit"])
    hints = Hints(read_file=tree.read_file, list_files=tree.list_files)
    for path in fix_paths:
        buggy_text = tree.read_file(path)
        fixed_bytes = realbugs.file_at(bare, source["fixed_commit"], path)
        if buggy_text is None or fixed_bytes is None:
            bug.hunks.append(HunkResult(path, (), ()))  # a file the fix adds or deletes: no template makes that
            continue
        if _units(buggy_text) is None:
            bug.skipped = f"{path} does not parse at the buggy commit"
            bug.hunks = []
            return bug
        for target, lines in code_hunks(buggy_text, fixed_bytes.decode("utf-8", errors="replace")):
            bug.hunks.append(HunkResult(path, lines, reproducing_templates(buggy_text, target, path, lines, hints)))
    if not bug.hunks:
        bug.skipped = "the fix changes no code (comments or docstrings only)"
    return bug


def training_bugs(
    bugsinpy: Path, mirror_dir: Path, tasks_dir: Path, *, benchmark: bool = False
) -> Iterator[tuple[str, int, dict[str, str], str]]:
    """(project, number, bug.info, url) of every BugsInPy bug with a local mirror, outside the benchmark's tasks
    and the projects kept aside (``benchmark``: the benchmark's own tasks instead, to see which fixes the
    templates contain; never for learning)."""
    evaluated = set()
    for path in sorted(tasks_dir.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        evaluated.add(data.get("meta", {}).get("bugsinpy", ""))
    for project_dir in sorted((bugsinpy / "projects").iterdir()):
        project = project_dir.name
        if project in KEPT_ASIDE or not (project_dir / "project.info").exists():
            continue
        url = realbugs.read_bugsinpy_info(project_dir / "project.info").get("github_url", "")
        if not url or realbugs.mirror_for(url, mirror_dir) == url:
            continue  # no local mirror: not fetched here
        numbers = sorted(int(p.name) for p in (project_dir / "bugs").iterdir() if p.name.isdigit())
        for number in numbers:
            if (f"{project}/{number}" in evaluated) != benchmark:
                continue
            yield project, number, realbugs.read_bugsinpy_info(project_dir / "bugs" / str(number) / "bug.info"), url


def learn(bugs: Sequence[BugResult]) -> dict[str, Any]:
    """Shares of the hunks per template and the learned priors (see the module's docstring)."""
    hunks = [h for b in bugs for h in b.hunks]
    credit: defaultdict[str, float] = defaultdict(float)
    for hunk in hunks:
        for template in hunk.templates:
            credit[template] += 1 / len(hunk.templates)
    credit[PAIR] = sum(1 for b in bugs if b.pair and not b.single)
    total = len(hunks) + 1
    share = {t.id: (credit[t.id] + SMOOTHING) / total for t in registry.TEMPLATES}
    # The hand priors are no probabilities (they sum to far more than 1): the scale that maps a share onto them
    # is the geometric mean of prior / share over the old families the fixes credited (a family never credited
    # says nothing about the scale, only about itself).
    informative = [t.id for t in registry.TEMPLATES if t.id not in LEARNED and t.id != PAIR and credit[t.id] > 0]
    if not informative:
        raise InputError("no fix hunk was reproduced by a family with a hand prior: nothing sets the scale")
    scale = math.exp(sum(math.log(registry.PRIORS[t] / share[t]) for t in informative) / len(informative))
    learned = {t: round(min(MAX_PRIOR, scale * share[t]), 3) for t in (*LEARNED, PAIR)}
    return {
        "bugs": len(bugs),
        "bugs_with_hunks": sum(1 for b in bugs if b.hunks),
        "hunks": len(hunks),
        "hunks_reproduced": sum(1 for h in hunks if h.templates),
        "bugs_fixed_by_one_template": sum(1 for b in bugs if b.single),
        "bugs_fixed_by_a_pair": sum(1 for b in bugs if b.pair and not b.single),
        "credit": {t: round(c, 3) for t, c in sorted(credit.items()) if c},
        "scale": round(scale, 4),
        "scale_from": informative,
        "measured_prior": {t.id: round(min(MAX_PRIOR, scale * share[t.id]), 3) for t in registry.TEMPLATES},
        "learned": learned,
    }


def bugs_of_record(record: dict[str, Any]) -> list[BugResult]:
    """The per-bug results a learning record holds (so its summary can be recomputed without git)."""
    return [
        BugResult(
            b["bug"],
            [HunkResult(h["path"], tuple(h["lines"]), tuple(h["templates"])) for h in b["hunks"]],
            b["skipped"],
        )
        for b in record["bugs"]
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.priors", description=__doc__.splitlines()[0])
    parser.add_argument("--bugsinpy", type=Path, required=True, help="a checkout of soarsmu/BugsInPy")
    parser.add_argument("--mirror-dir", type=Path, required=True, help="local git mirrors (owner+name/repo)")
    parser.add_argument("--tasks", type=Path, default=Path("bench/realbugs/tasks"), help="the benchmark (excluded)")
    parser.add_argument("--projects", type=Path, default=Path("bench/realbugs/projects.json"))
    parser.add_argument("--out", type=Path, default=Path("bench/realbugs/priors.json"))
    parser.add_argument(
        "--benchmark",
        action="store_true",
        help="analyse the benchmark's own bugs instead (a ceiling, never learnt from)",
    )
    parser.add_argument(
        "--relearn", action="store_true", help="recompute the summary of the --out record's bugs (no git)"
    )
    args = parser.parse_args(argv)
    if args.relearn:
        record = json.loads(args.out.read_text(encoding="utf-8"))
        record["summary"] = learn(bugs_of_record(record))
        args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(record["summary"]["learned"], indent=1))
        return 0
    if not (args.bugsinpy / "projects").is_dir():
        print(f"selfix: error: not a BugsInPy checkout (no projects/): {args.bugsinpy}", file=sys.stderr)
        return 2
    realbugs.set_mirror_dir(args.mirror_dir)
    test_dirs = {
        name: spec.get("test_dirs", [])
        for name, spec in json.loads(args.projects.read_text(encoding="utf-8")).items()
        if isinstance(spec, dict)
    }
    bugs = []
    for project, number, info, url in training_bugs(
        args.bugsinpy, args.mirror_dir, args.tasks, benchmark=args.benchmark
    ):
        bug = analyse_bug(project, number, info, url, test_dirs.get(project, ["tests", "test"]))
        bugs.append(bug)
        found = ", ".join(sorted({t for h in bug.hunks for t in h.templates})) or "-"
        print(f"{bug.bug}: {len(bug.hunks)} code hunk(s), reproduced by: {found} {bug.skipped}", flush=True)
    summary = learn(bugs)
    record = {
        "command": "python -m selfix_bench.priors --bugsinpy <BugsInPy> --mirror-dir <mirrors>"
        + (" --benchmark" if args.benchmark else ""),
        "bugs_analysed": "the benchmark's own (not learnt from)"
        if args.benchmark
        else "training: outside the benchmark",
        "string_edit_evidence": "the literals a hunk changes stand in for the failing assertion's compared strings",
        "summary": summary,
        "bugs": [
            {
                "bug": b.bug,
                "skipped": b.skipped,
                "hunks": [{"path": h.path, "lines": list(h.lines), "templates": list(h.templates)} for h in b.hunks],
            }
            for b in bugs
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: summary[k] for k in summary if k != "measured_prior"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
