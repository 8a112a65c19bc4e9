"""The docs a user reads hold: every relative link of README.md and docs/*.md reaches a file (and a heading, for a
link with an anchor) that exists; the README opens with the two commands (the main job on a bundled example,
and the exact test command `.ci/run` runs), lists every command `selfix --help` has, and tells an adopter what
to pin before a release, where the defaults and the key go, and that a local model needs a self-hosted runner."""

from __future__ import annotations

import argparse
import importlib.util
import re
import unicodedata
from pathlib import Path

import pytest

from selfix_action.cli import build_parser
from selfix_action.llm.factory import DEFAULT_MODELS

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
DOCS = (README, *sorted((REPO_ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without fenced blocks and code spans (a link's syntax inside them is not a link)."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).replace("`", "").strip().lower()
    kept = "".join(ch for ch in text if ch in "-_ " or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for match in _HEADING.finditer(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(match["title"])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(doc: Path) -> list[str]:
    """Each relative link of ``doc`` whose file, or whose heading in a Markdown file, does not exist."""
    broken = []
    for match in _LINK.finditer(_prose(doc.read_text(encoding="utf-8"))):
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file of this repository
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (doc.parent / path_part).resolve() if path_part else doc
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return broken


def test_slugs_are_githubs() -> None:
    assert slug("Config file `.github/selfix.yml`") == "config-file-githubselfixyml"
    assert slug("Two variants: Docker and composite") == "two-variants-docker-and-composite"
    assert (
        slug("The LLM path on real bugs: a capable model (issue 21)")
        == "the-llm-path-on-real-bugs-a-capable-model-issue-21"
    )
    assert (
        slug("`selfix heal` and `selfix publish` (split privileges)")
        == "selfix-heal-and-selfix-publish-split-privileges"
    )


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    assert not broken_links(doc), "\n".join(broken_links(doc))


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    """The check above can fail: a link to a missing file, and one to a missing heading, are reported."""
    (tmp_path / "other.md").write_text("# Present\n", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Top\n\n[ok](other.md#present) [ok too](#top) [gone](ACTION.md) [no heading](other.md#absent)\n"
        "`[not a link](missing.md)`\n\n```\n[nor this](missing.md)\n```\n",
        encoding="utf-8",
    )
    assert [line.split(":")[0] for line in broken_links(doc)] == ["ACTION.md", "other.md#absent"]


def _subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


def test_readme_lists_every_command() -> None:
    readme = README.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `selfix (\w+)", readme, re.MULTILINE))
    assert set(_subcommands()) == listed, f"README's command table lists {sorted(listed)}, selfix has {_subcommands()}"
    cli = (REPO_ROOT / "docs" / "CLI.md").read_text(encoding="utf-8")
    assert set(_subcommands()) <= set(re.findall(r"^\| `selfix (\w+)", cli, re.MULTILINE))


def test_readme_opens_with_the_main_job_and_the_ci_test_command() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    commands = [line.strip() for line in lines[:12] if line.startswith("    ")]
    assert len(commands) == 2, commands
    assert commands[0].endswith("&& .venv/bin/selfix fix examples/range_sum")
    ci_test = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert commands[1].endswith("&& " + ci_test), (commands[1], ci_test)


def test_readme_tells_an_adopter_what_to_pin_which_key_and_which_models() -> None:
    readme = README.read_text(encoding="utf-8")
    adopter = readme.split("\n## On your machine", 1)[0]
    assert "`@v0` does not exist yet" in adopter
    assert "git ls-remote https://github.com/selfix-action/selfix-action refs/heads/main" in adopter
    assert "anthropic_api_key: ${{ secrets.ANTHROPIC_API_KEY }}" in adopter
    for provider, model in DEFAULT_MODELS.items():
        assert f"`{model}`" in adopter, f"the default {provider} model {model} is not named"
    assert "self-hosted" in adopter and "GitHub-hosted runners cannot reach" in adopter
    for outcome in ("Healed", "Not healed", "Nothing to heal"):
        assert f"**{outcome}**" in adopter


_DOC_MENTION = re.compile(r"\bdocs/(?P<file>[\w.-]+\.md)(?:#(?P<anchor>[\w-]+))?")


def test_docs_named_in_code_and_workflows_exist() -> None:
    """A `docs/X.md` (or `docs/X.md#heading`) named in the package, the workflows or action.yml exists."""
    sources = [
        *sorted((REPO_ROOT / "selfix_action").rglob("*.py")),
        *sorted((REPO_ROOT / "examples" / "workflows").glob("*.yml")),
        REPO_ROOT / "action.yml",
        REPO_ROOT / "composite" / "action.yml",
        REPO_ROOT / "zizmor.yml",
    ]
    missing = []
    for source in sources:
        for match in _DOC_MENTION.finditer(source.read_text(encoding="utf-8")):
            doc = REPO_ROOT / "docs" / match["file"]
            if not doc.is_file() or (match["anchor"] and match["anchor"] not in anchors(doc)):
                missing.append(f"{source.relative_to(REPO_ROOT)}: {match.group(0)}")
    assert not missing, "\n".join(missing)


_MODULE_COMMAND = re.compile(r"\bpython3? -m (?P<module>[A-Za-z_][\w.]*)")


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package that does not exist
        return False


def module_commands(text: str) -> set[str]:
    """The modules of every ``python -m MODULE`` command in ``text`` (code blocks and spans included)."""
    return {m["module"].rstrip(".") for m in _MODULE_COMMAND.finditer(text)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_python_m_command_names_a_module_that_exists(doc: Path) -> None:
    """A `python -m X` a reader copies runs X: the benchmark's commands moved to selfix_bench (issue 24)."""
    missing = sorted(m for m in module_commands(doc.read_text(encoding="utf-8")) if not importable(m))
    assert not missing, missing


def test_the_module_check_finds_a_moved_module() -> None:
    text = "    python -m selfix_bench.speed bench/tasks\n`python -m selfix_action.bench.speed` and python -m pip\n"
    found = module_commands(text)
    assert found == {"selfix_bench.speed", "selfix_action.bench.speed", "pip"}
    assert [m for m in sorted(found) if not importable(m)] == ["selfix_action.bench.speed"]
