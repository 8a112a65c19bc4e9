"""Every option a user can set, declared once: its action input, its ``.github/selfix.yml`` key, its ``selfix fix``
flag, its default and its one description.

From this table come action.yml's ``inputs:`` (``python -m selfix_action.options``, then
``packaging/composite.py`` for the composite variant), the config file's schema (``FileConfig``, generated in
``ci/settings.py``) and the defaults the action's settings start from. ``tests/test_options.py`` checks that
action.yml, the composite variant, ``Settings``, the config schema and ``selfix fix --help`` agree with it, and
that every flag of ``selfix fix`` is either here or in ``CLI_ONLY`` with the reason.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

ROOT = Path(__file__).resolve().parents[1]
ACTION_YML = ROOT / "action.yml"

Kind = Literal["str", "int", "float", "bool", "list", "secret", "ports"]


def _port_items(value: Any) -> Any:
    """A ports setting as items: "5432,6379" (an input, a YAML string) or 5432 (a YAML number) as a list."""
    if isinstance(value, str):
        return [item for item in value.replace(",", " ").split() if item]
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    return value


# TCP ports, each 1-65535: a list in the config file, or comma-separated in an input or variable.
Ports = Annotated[tuple[Annotated[int, Field(ge=1, le=65535)], ...], BeforeValidator(_port_items)]


@dataclass(frozen=True)
class Option:
    name: str  # the action input and the config key
    kind: Kind
    default: Any  # the built-in default ("" for none)
    help: str  # action.yml's description, the config schema's, the docs'
    cli: tuple[str, ...] = ()  # the `selfix fix` flags that set it (none: the action's only)
    config: bool = True  # also a key of .github/selfix.yml (never a secret)
    choices: tuple[str, ...] = ()
    limits: dict[str, Any] = field(default_factory=dict)  # pydantic bounds: ge, le, gt, min_length, max_length
    declared_default: str = ""  # what action.yml declares; "" lets the config file set it

    @property
    def annotation(self) -> Any:
        """The settings' type of the option."""
        if self.choices:
            return Literal[self.choices]
        if self.kind == "ports":
            return Ports
        return {"str": str, "secret": str, "int": int, "float": float, "bool": bool, "list": tuple[str, ...]}[self.kind]


def _options(*options: Option) -> tuple[Option, ...]:
    names = [o.name for o in options]
    if len(set(names)) != len(names):
        raise ValueError("an option is declared twice")
    return options


OPTIONS = _options(
    # -- keys and servers ---------------------------------------------------------------------------------
    Option(
        "github_token",
        "secret",
        "",
        "Token for the GitHub API and for pushing the fix branch. Pushes made with GITHUB_TOKEN do not start new "
        "workflow runs; use a GitHub App or fine-grained token for that.",
        config=False,
        declared_default="${{ github.token }}",
    ),
    Option(
        "anthropic_api_key",
        "secret",
        "",
        "Anthropic API key (enables the anthropic engine), e.g. ${{ secrets.ANTHROPIC_API_KEY }}. Never passed to "
        "the project's code.",
        cli=("--api-key",),
        config=False,
    ),
    Option(
        "openai_api_key",
        "secret",
        "",
        "OpenAI (or compatible) API key (enables the openai engine). Never passed to the project's code.",
        cli=("--api-key",),
        config=False,
    ),
    Option(
        "anthropic_base_url",
        "str",
        "",
        "Base URL of the Anthropic API or a compatible proxy (default: Anthropic's).",
        cli=("--base-url",),
    ),
    Option(
        "openai_base_url",
        "str",
        "",
        "Base URL of an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp...; default: OpenAI's). A server on "
        "your own machine needs a self-hosted runner.",
        cli=("--base-url",),
    ),
    # -- engine -------------------------------------------------------------------------------------------
    Option(
        "engine",
        "str",
        "",
        "offline, anthropic, openai or auto (default: offline; auto when an API key is given: the offline engine "
        "first within a small budget, then the LLM engine of that key, shown what the offline engine tried).",
        cli=("--engine",),
        choices=("offline", "anthropic", "openai", "auto"),
    ),
    Option(
        "provider",
        "str",
        "",
        "The LLM engine --engine auto goes on to: anthropic or openai (default: the one whose key is given, "
        "anthropic if both are).",
        cli=("--provider",),
        choices=("anthropic", "openai"),
    ),
    Option(
        "model",
        "str",
        "",
        "Model name for an LLM engine (default: claude-sonnet-4-6 for anthropic, gpt-5-mini for openai).",
        cli=("--model",),
    ),
    Option(
        "structured",
        "str",
        "auto",
        "How an LLM engine's answers are structured: auto (tool calls, stepping down to a JSON Schema the server "
        "enforces, then JSON in the prompt, when the server ignores them), tools, json-schema or json.",
        cli=("--structured",),
        choices=("auto", "tools", "json-schema", "json"),
        declared_default="auto",
    ),
    Option(
        "request_timeout",
        "float",
        120.0,
        "Seconds one model request may take (default: 120); a request that times out is retried once, after its "
        "connection is dropped.",
        cli=("--request-timeout",),
        limits={"gt": 0},
        declared_default="120",
    ),
    Option(
        "max_retry_wait",
        "float",
        30.0,
        "Longest single wait, in seconds, before a model request is retried (rate limits, overload) (default: 30).",
        cli=("--max-retry-wait",),
        limits={"ge": 0},
    ),
    Option(
        "max_calls",
        "int",
        40,
        "Model calls per heal at most (default: 40; 0: no cap).",
        cli=("--max-calls",),
        limits={"ge": 0},
    ),
    Option(
        "max_tokens",
        "int",
        400_000,
        "Input and output tokens per heal at most (default: 400000; 0: no cap).",
        cli=("--max-tokens",),
        limits={"ge": 0},
    ),
    Option(
        "max_cost_usd",
        "float",
        2.0,
        "Budget for LLM engines, in US dollars (default: 2). A model missing from the price table needs its price "
        "(prices_file) for the cap to hold.",
        cli=("--max-cost",),
        limits={"ge": 0},
    ),
    Option(
        "prices_file",
        "str",
        "",
        "A YAML or JSON price table in the repository, overriding the built-in one: {model: {input: USD per million "
        "tokens, output: ..., cache_read: ...}}.",
        cli=("--prices",),
    ),
    Option(
        "price_per_mtok_in",
        "float",
        None,
        "US dollars per million input tokens of a model missing from the price table (with price_per_mtok_out; "
        "0 and 0 for a free local server): without a price, a cost cap cannot hold and selfix refuses to start.",
        cli=("--price-per-mtok-in",),
        limits={"ge": 0},
    ),
    Option(
        "price_per_mtok_out",
        "float",
        None,
        "US dollars per million output tokens of a model missing from the price table (with price_per_mtok_in).",
        cli=("--price-per-mtok-out",),
        limits={"ge": 0},
    ),
    Option(
        "max_output_tokens",
        "int",
        0,
        "Output tokens per model answer at most (default: 0, each role's own).",
        cli=("--max-output-tokens",),
        limits={"ge": 0},
    ),
    Option(
        "samples",
        "int",
        1,
        "Patcher answers per hypothesis, when the budget allows (default: 1).",
        cli=("--samples",),
        limits={"ge": 1, "le": 8},
    ),
    Option(
        "max_asks",
        "int",
        8,
        "Asks for more context (a file's lines, a definition, a search of the project) the LLM engine's Detective "
        "and Patcher may make in one heal, within the call and token budgets (default: 8; 0: none).",
        cli=("--max-asks",),
        limits={"ge": 0, "le": 50},
    ),
    Option(
        "offline_candidates",
        "int",
        100,
        "With engine auto: candidate patches the offline engine may try before the LLM engine is asked (default: 100).",
        cli=("--offline-candidates",),
        limits={"ge": 0},
    ),
    # -- the project's tests ------------------------------------------------------------------------------
    Option(
        "test_command",
        "str",
        "",
        "The project's pytest invocation, e.g. 'python -m pytest' (default: python -m pytest).",
        cli=("--test-cmd",),
    ),
    Option(
        "working_directory",
        "str",
        "",
        "The project's folder in the repository, as the CI job's working-directory (e.g. 'backend' for a project "
        "in a monorepo's subfolder): the tests and setup_command run there. Default: found from the JUnit report "
        "(the folder its failing tests are in) or, without one, the repository's one Python project; '.' is "
        "the root. Patches, pull requests and protected paths stay repository-relative.",
        cli=("--working-directory",),
    ),
    Option(
        "toolchain",
        "str",
        "auto",
        "Which language's tests selfix runs: auto (a package.json and no Python file is a JavaScript/TypeScript "
        "project, healed with its own runner: jest, vitest, mocha or node --test; anything else is Python, healed "
        "with pytest), python or node (default: auto). JavaScript projects need the LLM engine and node on the "
        "runner (the composite variant, after actions/setup-node).",
        cli=("--toolchain",),
        choices=("auto", "python", "node"),
    ),
    Option(
        "setup_command",
        "str",
        "",
        "Installs the project's dependencies, e.g. 'pip install -e .[test]' (an argument list, not a shell "
        "string): inside the tests' isolation with the network allowed, on a scratch copy, into a virtual "
        "environment of the project's own that the tests then use.",
    ),
    Option(
        "junit_paths",
        "list",
        ("**/junit*.xml", "**/TEST-*.xml"),
        "Comma/newline-separated globs of local JUnit XML files (default: **/junit*.xml, **/TEST-*.xml).",
    ),
    Option(
        "junit_artifact",
        "str",
        "*junit*",
        "Name pattern of the failed run's artifacts that hold JUnit XML (default: *junit*).",
    ),
    Option(
        "heal_seen_failures",
        "bool",
        False,
        "When none of the JUnit report's failing tests exist in this checkout, heal the tests that fail here "
        "instead of stopping with report_tests_not_found (default: false).",
        cli=("--heal-seen-failures",),
    ),
    Option(
        "test_timeout",
        "float",
        120.0,
        "Wall seconds one run of the project's tests may take (default: 120); a test still running then is "
        "reported as hung, never healed.",
        cli=("--test-timeout",),
        limits={"gt": 0},
    ),
    Option(
        "isolation",
        "str",
        "auto",
        "How the project's tests are isolated: auto (best that works: bwrap, then landlock, then unshare, then "
        "none), bwrap, landlock (no namespaces: Landlock, seccomp and a dropped uid; works in the Docker action), "
        "unshare or none (default: auto). The job summary says which was used.",
        cli=("--isolation",),
        choices=("auto", "bwrap", "landlock", "unshare", "none"),
    ),
    Option(
        "require_isolation",
        "bool",
        False,
        "Refuse to run the project's tests without isolation (bwrap, landlock or unshare) (default: false).",
        cli=("--require-isolation",),
    ),
    Option(
        "allow_ports",
        "ports",
        (),
        "TCP ports of the runner's loopback the tests may connect to, e.g. 5432,6379 for the postgres and redis "
        "services the CI job starts (default: none, every port closed). Only 127.0.0.1/::1 at those ports (at the "
        "landlock level, those ports on any address: docs/SECURITY.md); without it, tests failing to connect to a "
        "loopback port stop the heal as the environment's, not the code's.",
        cli=("--allow-ports",),
    ),
    Option(
        "jobs",
        "int",
        0,
        "Candidate patches checked side by side (default: 0, the runner's CPUs, at most 4).",
        cli=("--jobs",),
        limits={"ge": 0, "le": 64},
    ),
    # -- the search -----------------------------------------------------------------------------------------
    Option(
        "max_attempts",
        "int",
        3,
        "Root-cause hypotheses to try (default: 3).",
        cli=("--hypotheses",),
        limits={"ge": 1, "le": 20},
    ),
    Option(
        "max_candidates",
        "int",
        500,
        "Candidate patches to try at most (default: 500).",
        cli=("--max-candidates",),
        limits={"ge": 1},
    ),
    Option(
        "timeout_minutes",
        "float",
        15.0,
        "Wall-clock limit for the heal, in minutes (default: 15; selfix fix --time-limit takes seconds).",
        cli=("--time-limit",),
        limits={"gt": 0, "le": 360},
    ),
    Option(
        "memory_path",
        "str",
        "none",
        "SQLite memory of past fixes, relative to the workspace, e.g. .selfix/memory.db (default: none, no "
        "memory: on the benchmark it changed no heal, docs/LEARNING.md). Keep it across runs with actions/cache "
        "(see examples/workflows/selfix-memory-cache.yml).",
        cli=("--memory", "--no-memory"),
    ),
    # -- publishing -------------------------------------------------------------------------------------------
    Option(
        "mode",
        "str",
        "pr",
        "pr (open a fix PR), commit (push onto the failing PR's branch), suggest (review suggestions) or report "
        "(comment only). Default: pr.",
        choices=("pr", "commit", "suggest", "report"),
    ),
    Option(
        "allowed_users",
        "list",
        (),
        "If set, only these users (who also need write access) may run /selfix commands.",
    ),
    Option(
        "allowed_bots",
        "list",
        (),
        "Bot logins allowed to run /selfix commands, by exact name (e.g. renovate[bot]).",
    ),
    Option(
        "protected_paths",
        "list",
        (),
        "Extra globs selfix must never edit (tests, conftest.py, CI files and lockfiles are always protected).",
    ),
    Option("labels", "list", ("selfix",), "Labels for fix PRs (default: selfix)."),
    Option("draft", "bool", False, "Open fix PRs as drafts (default: false)."),
    Option(
        "pr_confidence",
        "str",
        "high",
        "The lowest patch confidence that opens a ready fix PR (GitLab: merge request): high (default), medium or "
        "low. One level below it: a draft PR whose body leads with the evidence against the patch (review "
        "suggestions in suggest or commit mode, never a push onto the branch); below that: one escalation with "
        "the verified patch attached, nothing pushed.",
        choices=("high", "medium", "low"),
    ),
    Option(
        "ci_on_fix_branch",
        "str",
        "dispatch",
        "dispatch (default): after pushing a fix branch, run the failed workflow on it with workflow_dispatch, "
        "since pushes made with GITHUB_TOKEN start no workflow, and link the run in the PR (needs actions: write "
        "and an on: workflow_dispatch trigger in that workflow); off: do not.",
        choices=("dispatch", "off"),
    ),
    Option(
        "max_open_prs",
        "int",
        3,
        "Open selfix fix PRs (branches selfix/...) per repository at most (default: 3; 0: no cap). At the cap, a "
        "new fix is not opened as a PR: one comment (edited on later runs) shows the verified patch and says how "
        "to raise the cap.",
        limits={"ge": 0},
    ),
    Option(
        "opt_out_label",
        "str",
        "selfix:skip",
        "Label that makes selfix leave a pull request alone (default: selfix:skip): a failure on a PR with it, or "
        "a /selfix command there, only logs why; selfix's own fix PR or escalation issue with it is no longer "
        "updated.",
        limits={"min_length": 1, "max_length": 50},
    ),
    Option(
        "from_error",
        "str",
        "",
        "Heal a production error instead of a failed run: a path in the workspace to a Python traceback (text) or a "
        "Sentry event or issue-alert payload (JSON). QA first writes a new test that fails with that error (an LLM "
        "engine is needed); the PR adds it. A workflow_dispatch run's `error` input (the text itself, as selfix "
        "serve sends it) does the same.",
        cli=("--from-error",),
        config=False,
    ),
    Option(
        "config_file",
        "str",
        ".github/selfix.yml",
        "Path of the selfix config file in the repository.",
        config=False,
        declared_default=".github/selfix.yml",
    ),
)

BY_NAME = {option.name: option for option in OPTIONS}

# `selfix fix` flags with no action input, and why.
CLI_ONLY = {
    "--junit": "the action finds the reports itself (junit_paths, junit_artifact)",
    "--out": "the action writes its report to .selfix/report/ and uploads it",
    "--apply": "the action publishes the patch (mode) instead of editing the checkout",
    "--quiet": "the action's log is the job log",
    "--hint": "the action's hint is the text of the /selfix comment",
    "--replay": "replays a recorded trace: a maintainer's regression check, not a user's setting",
    "--replay-then-server": "replays a recorded trace, then asks a server: a maintainer's measurement, not a user's "
    "setting",
}


def render_inputs() -> str:
    """action.yml's ``inputs:`` block."""
    lines = ["inputs:"]
    for option in OPTIONS:
        lines += [
            f"  {option.name}:",
            f"    description: {_yaml_string(option.help)}",
            "    required: false",
            f"    default: {_yaml_string(option.declared_default)}",
        ]
    return "\n".join(lines) + "\n"


DOCS = ROOT / "docs" / "ACTION.md"
TABLE_BEGIN = "<!-- inputs: generated by python -m selfix_action.options; edit selfix_action/options.py -->"
TABLE_END = "<!-- end of inputs -->"


def render_inputs_table() -> str:
    """docs/ACTION.md's table of every input: config key, `selfix fix` flag, default, description."""
    rows = [
        TABLE_BEGIN,
        "| input | config key | `selfix fix` | default | what it does |",
        "|---|---|---|---|---|",
    ]
    for o in OPTIONS:
        if isinstance(o.default, tuple):
            default = ", ".join(o.default)
        else:
            default = o.declared_default or ("" if o.default is None else str(o.default))
        flags = " ".join(f"`{flag}`" for flag in o.cli) or "—"
        config = "yes" if o.config else "no (secret)" if o.kind == "secret" else "no"
        text = o.help.replace("|", "\\|")
        rows.append(
            f"| `{o.name}` | {config} | {flags} | `{default}` | {text} |"
            if default
            else f"| `{o.name}` | {config} | {flags} | — | {text} |"
        )
    return "\n".join([*rows, TABLE_END]) + "\n"


def write_docs_table(path: Path = DOCS, *, check: bool = False) -> bool:
    """Rewrite the inputs table between its markers in ``path`` (appended as a section if missing)."""
    text = path.read_text(encoding="utf-8")
    if TABLE_BEGIN in text and TABLE_END in text:
        head, rest = text.split(TABLE_BEGIN, 1)
        tail = rest.split(TABLE_END, 1)[1].lstrip("\n")
        updated = head + render_inputs_table() + ("\n" + tail if tail else "")
    else:
        updated = text.rstrip("\n") + "\n\n## Every input\n\n" + render_inputs_table()
    if check:
        return updated == text
    path.write_text(updated, encoding="utf-8")
    return True


def _yaml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_INPUTS_BLOCK = re.compile(r"^inputs:\n(?:  .*\n|\n)*?(?=^\S)", re.MULTILINE)


def write_action_yml(path: Path = ACTION_YML, *, check: bool = False) -> bool:
    """Rewrite ``path``'s inputs from the table; with ``check``, only say whether it is up to date."""
    text = path.read_text(encoding="utf-8")
    updated, count = _INPUTS_BLOCK.subn(render_inputs(), text, count=1)
    if count != 1:
        raise ValueError(f"{path}: no top-level inputs: block")
    if check:
        return updated == text
    path.write_text(updated, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="action.yml's inputs and docs/ACTION.md's table from the options")
    parser.add_argument("--check", action="store_true", help="exit 1 if action.yml is out of date")
    args = parser.parse_args(argv)
    if args.check:
        ok = write_action_yml(check=True) and write_docs_table(check=True)
        if not ok:
            print("action.yml or docs/ACTION.md is out of date: python -m selfix_action.options", file=sys.stderr)
        return 0 if ok else 1
    write_action_yml()
    write_docs_table()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
