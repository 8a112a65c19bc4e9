"""The ``selfix`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from selfix_action import __version__
from selfix_action.errors import ExitCode, SelfixError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse exits 2 too; keep its usage line but make the message ours.
        self.print_usage(sys.stderr)
        print(f"selfix: error: {message}", file=sys.stderr)
        raise SystemExit(ExitCode.BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="selfix", description="Self-healing CI: failing tests in, verified patch out.")
    parser.add_argument("--version", action="version", version=f"selfix {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    junit = sub.add_parser("junit", help="list the test cases in JUnit/xUnit XML reports")
    junit.add_argument("files", nargs="+", metavar="FILE")
    junit.add_argument("--json", action="store_true", help="print one JSON object with cases and errors")

    sub.add_parser("action", help="run as the GitHub Action (reads GITHUB_* and INPUT_* from the environment)")

    fix = sub.add_parser("fix", help="heal the failing tests of a local repository")
    fix.add_argument("repo", nargs="?", default=".", help="git checkout or plain folder (default: .)")
    fix.add_argument("--junit", nargs="+", default=[], metavar="FILE", help="JUnit reports of the failed run")
    fix.add_argument("--test-cmd", help="the project's pytest invocation (default: python -m pytest)")
    fix.add_argument(
        "--engine",
        default="offline",
        choices=["offline", "anthropic", "openai"],
        help="offline (default, no key), anthropic, or openai (any OpenAI-compatible server)",
    )
    fix.add_argument("--out", type=Path, help="output folder (default: REPO/.selfix)")
    fix.add_argument("--apply", action="store_true", help="apply the verified patch to the working tree")
    fix.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    fix.add_argument("--test-timeout", type=float, default=120.0, help="wall seconds per test run (120)")
    fix.add_argument("--max-candidates", type=int, default=500, help="candidate patches to try at most (500)")
    fix.add_argument("--hypotheses", type=int, default=3, help="hypotheses to try (3)")
    fix.add_argument("--time-limit", type=float, default=900.0, help="wall seconds for the whole run (900)")
    fix.add_argument("--hint", default="", help="free text for the Detective")
    llm = fix.add_argument_group("LLM engines")
    llm.add_argument("--model", help="model name (default per provider)")
    llm.add_argument("--base-url", help="API base URL (default: ANTHROPIC_BASE_URL / OPENAI_BASE_URL)")
    llm.add_argument("--api-key", help="API key (default: ANTHROPIC_API_KEY / OPENAI_API_KEY)")
    llm.add_argument("--max-calls", type=int, default=40, help="model calls at most (40; 0: no cap)")
    llm.add_argument("--max-tokens", type=int, default=400_000, help="input+output tokens at most (400000)")
    llm.add_argument("--max-cost", type=float, default=2.0, help="US dollars at most (2.0)")
    llm.add_argument("--prices", type=Path, help="YAML/JSON price table overriding the built-in one")
    llm.add_argument("--max-retry-wait", type=float, default=30.0, help="longest single wait before a retry (30s)")
    box = fix.add_argument_group("sandbox")
    box.add_argument(
        "--isolation",
        default="auto",
        choices=["auto", "bwrap", "unshare", "none"],
        help="how test runs are isolated (auto: the best that works here)",
    )
    box.add_argument("--require-isolation", action="store_true", help="refuse to run without isolation")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "junit":
            from selfix_action.commands.junit_cmd import run_junit

            return run_junit(args.files, args.json, sys.stdout, sys.stderr)
        if args.command == "action":
            from selfix_action.commands.action_cmd import run_action

            return run_action(os.environ, sys.stdout, sys.stderr)
        if args.command == "fix":
            from selfix_action.commands.fix_cmd import FixOptions, resolve_test_cmd, run_fix

            repo = Path(args.repo)
            if not repo.is_dir():
                raise SelfixError(f"not a directory: {args.repo}")
            if args.test_timeout <= 0 or args.max_candidates < 1 or args.hypotheses < 1 or args.time_limit <= 0:
                raise SelfixError("--test-timeout, --time-limit, --max-candidates and --hypotheses must be positive")
            options = FixOptions(
                repo=repo,
                junit=tuple(Path(p) for p in args.junit),
                test_cmd=resolve_test_cmd(args.test_cmd, repo.resolve()),
                engine=args.engine,
                out=args.out,
                apply=args.apply,
                quiet=args.quiet,
                test_timeout=args.test_timeout,
                max_candidates=args.max_candidates,
                max_hypotheses=args.hypotheses,
                time_limit=args.time_limit,
                hint=args.hint,
                model=args.model,
                base_url=args.base_url,
                api_key=args.api_key,
                max_calls=args.max_calls,
                max_tokens=args.max_tokens,
                max_cost=args.max_cost,
                prices=args.prices,
                max_retry_wait=args.max_retry_wait,
                isolation=args.isolation,
                require_isolation=args.require_isolation,
            )
            return run_fix(options)
    except SelfixError as exc:
        print(f"selfix: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("selfix: interrupted; the working tree was not changed", file=sys.stderr)
        return 130
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
