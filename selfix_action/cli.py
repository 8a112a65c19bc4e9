"""The ``selfix`` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from selfix_action import __version__
from selfix_action.commands.engine_args import ENGINE_KINDS, add_llm_arguments, engine_choice
from selfix_action.errors import ExitCode, InputError, SelfixError

# The benchmark is a package of its own (selfix_bench: it imports the product, never the reverse, and the action's
# image does not hold it), so it is named here and looked up when `selfix bench` runs, never imported.
BENCH_MODULE = "selfix_bench.cli"
BENCH_MISSING = (
    "selfix bench needs the benchmark package selfix_bench, which this installation does not hold (the action's "
    "image and the composite action install the product only): install selfix from a clone, `pip install -e .`"
)


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
    sub.add_parser("gitlab", help="run as a GitLab CI job after failed tests (reads CI_* and SELFIX_* variables)")
    heal = sub.add_parser("heal", help="split-privilege job 1: heal with a read-only token, write a patch bundle")
    heal.add_argument("--bundle", type=Path, help="bundle folder (default: $RUNNER_TEMP/selfix-bundle)")
    publish = sub.add_parser("publish", help="split-privilege job 2: verify a patch bundle, then push and comment")
    publish.add_argument("bundle", type=Path, metavar="BUNDLE", help="the folder written by selfix heal")
    # Listed for --help; its arguments are the benchmark's own (selfix bench --help), parsed by run_bench.
    sub.add_parser("bench", help="run benchmark tasks (bench/tasks) and report the resolve rate", add_help=False)

    fix = sub.add_parser("fix", help="heal the failing tests of a local repository")
    fix.add_argument("repo", nargs="?", default=".", help="git checkout or plain folder (default: .)")
    fix.add_argument("--junit", nargs="+", default=[], metavar="FILE", help="JUnit reports of the failed run")
    fix.add_argument(
        "--from-error",
        metavar="FILE",
        help="heal a production error instead of failing tests: a Python traceback (text, e.g. a crash log) or a "
        "Sentry event or issue-alert payload (JSON); '-' reads standard input. QA first writes a new test that "
        "fails with it (needs an LLM engine); the patch adds that test",
    )
    fix.add_argument(
        "--test-cmd",
        help="the project's test command (default: python -m pytest; for a JavaScript project its package.json "
        "test script)",
    )
    fix.add_argument(
        "--working-directory",
        default="",
        metavar="DIR",
        help="the project's folder in REPO (a monorepo's subfolder), where its tests run; default: found from "
        "the JUnit report or the repository, '.' the root",
    )
    fix.add_argument(
        "--toolchain",
        default="auto",
        choices=["auto", "python", "node"],
        help="python (pytest) or node (jest, vitest, mocha, node --test); auto: node for a package.json and no "
        "Python file",
    )
    fix.add_argument(
        "--engine",
        default="offline",
        choices=ENGINE_KINDS,
        help="offline (default, no key), anthropic, openai (any OpenAI-compatible server), or auto (offline "
        "first within a small budget, then the LLM engine whose key is set)",
    )
    fix.add_argument(
        "--out",
        type=Path,
        help="output folder (default: REPO/.selfix); refused: an existing file, the repository, a test folder, "
        "anything git tracks",
    )
    fix.add_argument("--apply", action="store_true", help="apply the verified patch to the working tree")
    fix.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    fix.add_argument("--test-timeout", type=float, default=120.0, help="wall seconds per test run (120)")
    fix.add_argument("--max-candidates", type=int, default=500, help="candidate patches to try at most (500)")
    fix.add_argument("--hypotheses", type=int, default=3, help="hypotheses to try (3)")
    fix.add_argument("--time-limit", type=float, default=900.0, help="wall seconds for the whole run (900)")
    fix.add_argument("--hint", default="", help="free text for the Detective")
    fix.add_argument(
        "--heal-seen-failures",
        action="store_true",
        help="when none of the JUnit report's failing tests is in this checkout, heal the tests failing here "
        "instead of stopping (exit 2)",
    )
    add_llm_arguments(fix)
    _add_sandbox_arguments(fix.add_argument_group("sandbox"))
    mem = fix.add_argument_group("memory of past fixes")
    mem.add_argument(
        "--memory", type=Path, metavar="PATH", help="read and update this SQLite memory file (default: no memory)"
    )
    mem.add_argument("--no-memory", action="store_true", help="neither read nor update a memory (the default)")
    _add_mcp_command(sub)
    _add_serve_command(sub)
    _add_learning_commands(sub)
    return parser


def _add_mcp_command(sub: argparse._SubParsersAction) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve the sandboxed tools (reproduce, localize, verify_patch, heal, ...) over MCP on stdio"
    )
    mcp.add_argument("--repo", default=".", help="the repository the tools work on, fixed for the session (default: .)")
    mcp.add_argument("--test-cmd", help="the project's pytest invocation (default: python -m pytest)")
    mcp.add_argument("--test-timeout", type=float, default=120.0, help="wall seconds per test run (120)")
    add_llm_arguments(mcp)
    _add_sandbox_arguments(mcp.add_argument_group("sandbox"))


def _add_serve_command(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="receive GitHub, Sentry and signed error webhooks; dispatch each heal to GitHub Actions or a local pool",
    )
    serve.add_argument(
        "--config", type=Path, required=True, metavar="FILE", help="the YAML config (secrets: SELFIX_SERVE_* env)"
    )


def _add_sandbox_arguments(box: argparse._ArgumentGroup) -> None:
    """How test runs are isolated, and how many candidates are checked at once: ``selfix fix``'s and
    ``selfix mcp``'s."""
    box.add_argument(
        "--isolation",
        default="auto",
        choices=["auto", "bwrap", "landlock", "unshare", "none"],
        help="how test runs are isolated (auto: the best that works here)",
    )
    box.add_argument("--require-isolation", action="store_true", help="refuse to run without isolation")
    box.add_argument(
        "--allow-ports",
        type=_port_list,
        default=(),
        metavar="PORTS",
        help="TCP ports of this machine's loopback the tests may connect to, e.g. 5432,6379 for a database and a "
        "cache started beforehand (default: none)",
    )
    box.add_argument(
        "--jobs",
        type=int,
        help="candidates checked side by side by the offline engine (default: the CPUs available, at most 4)",
    )


def _port_list(text: str) -> tuple[int, ...]:
    from selfix_action.sandbox.isolation import parse_ports

    try:
        return parse_ports(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _add_learning_commands(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="turn traces into training data (dpo) or a summary (stats)")
    kinds = export.add_subparsers(dest="export_kind", required=True, parser_class=_Parser)
    dpo = kinds.add_parser("dpo", help="preference pairs (prompt, chosen, rejected) for TRL's DPOTrainer")
    dpo.add_argument("traces", nargs="+", metavar="TRACE", help="trace.jsonl files or folders holding them")
    dpo.add_argument("-o", "--output", type=Path, required=True, help="JSONL file to write")
    dpo.add_argument("--threshold", type=float, default=0.2, help="keep pairs whose reward margin exceeds this")
    stats = kinds.add_parser("stats", help="summarise a corpus of traces")
    stats.add_argument("traces", nargs="+", metavar="TRACE")
    stats.add_argument("--json", action="store_true", help="print JSON")
    learn = sub.add_parser("learn", help="train the reward-model baseline (logistic regression) on traces")
    learn.add_argument("traces", nargs="+", metavar="TRACE")
    learn.add_argument("-o", "--output", type=Path, default=Path("reward_model.json"), help="model JSON")
    learn.add_argument("--held-out", type=float, default=0.25, help="fraction of runs held out (0.25)")
    view = sub.add_parser("view", help="render one trace as a self-contained HTML timeline")
    view.add_argument("trace", metavar="TRACE")
    view.add_argument("-o", "--output", type=Path, help="HTML file (default: TRACE with .html)")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["bench"]:  # every argument after it is the benchmark's (selfix_bench/cli.py)
        args = argparse.Namespace(command="bench", bench_argv=arguments[1:])
    else:
        args = build_parser().parse_args(arguments)
    try:
        if args.command == "bench":
            return run_bench(args.bench_argv)
        if args.command == "junit":
            from selfix_action.commands.junit_cmd import run_junit

            return run_junit(args.files, args.json, sys.stdout, sys.stderr)
        if args.command == "heal":
            from selfix_action.commands.split_cmd import run_heal

            return run_heal(os.environ, sys.stdout, sys.stderr, bundle_dir=args.bundle)
        if args.command == "publish":
            from selfix_action.commands.split_cmd import run_publish

            return run_publish(args.bundle, os.environ, sys.stdout, sys.stderr)
        if args.command == "gitlab":
            from selfix_action.commands.gitlab_cmd import run_gitlab

            return run_gitlab(os.environ, sys.stdout, sys.stderr)
        if args.command == "action":
            from selfix_action.commands.action_cmd import run_action

            return run_action(os.environ, sys.stdout, sys.stderr)
        if args.command == "fix":
            from selfix_action.commands.fix_cmd import FixOptions, resolve_test_cmd, run_fix
            from selfix_action.heal.error_input import read_error_file

            repo = Path(args.repo)
            if not repo.is_dir():
                raise SelfixError(f"not a directory: {args.repo}")
            if args.test_timeout <= 0 or args.max_candidates < 1 or args.hypotheses < 1 or args.time_limit <= 0:
                raise SelfixError("--test-timeout, --time-limit, --max-candidates and --hypotheses must be positive")
            if args.jobs is not None and args.jobs < 1:
                raise SelfixError("--jobs must be at least 1")
            options = FixOptions(
                repo=repo,
                junit=tuple(Path(p) for p in args.junit),
                reported_error=read_error_file(args.from_error) if args.from_error else None,
                test_cmd=resolve_test_cmd(args.test_cmd, repo.resolve() / (args.working_directory or ".")),
                working_directory=args.working_directory,
                toolchain=args.toolchain,
                engine=engine_choice(args, args.engine, os.environ),
                out=args.out,
                apply=args.apply,
                quiet=args.quiet,
                test_timeout=args.test_timeout,
                max_candidates=args.max_candidates,
                max_hypotheses=args.hypotheses,
                time_limit=args.time_limit,
                hint=args.hint,
                heal_seen_failures=args.heal_seen_failures,
                isolation=args.isolation,
                require_isolation=args.require_isolation,
                allow_ports=args.allow_ports,
                jobs=args.jobs,
                memory=args.memory,
                use_memory=not args.no_memory,
            )
            return run_fix(options)
        if args.command == "mcp":
            from selfix_action.commands.fix_cmd import FixOptions, resolve_test_cmd
            from selfix_action.commands.mcp_cmd import run_mcp

            repo = Path(args.repo)
            if not repo.is_dir():
                raise SelfixError(f"not a directory: {args.repo}")
            if args.test_timeout <= 0 or (args.jobs is not None and args.jobs < 1):
                raise SelfixError("--test-timeout and --jobs must be positive")
            return run_mcp(
                FixOptions(
                    repo=repo,
                    test_cmd=resolve_test_cmd(args.test_cmd, repo.resolve()),
                    engine=engine_choice(args, "offline", os.environ),
                    test_timeout=args.test_timeout,
                    isolation=args.isolation,
                    require_isolation=args.require_isolation,
                    allow_ports=args.allow_ports,
                    jobs=args.jobs,
                    use_memory=False,
                )
            )
        if args.command == "serve":
            from selfix_action.commands.serve_cmd import run_serve

            return run_serve(args.config)
        if args.command in ("export", "learn", "view"):
            from selfix_action.commands import learn_cmd

            if args.command == "view":
                return learn_cmd.run_view(args.trace, args.output, sys.stdout)
            if args.command == "learn":
                return learn_cmd.run_learn(args.traces, args.output, args.held_out, sys.stdout, sys.stderr)
            if args.export_kind == "dpo":
                return learn_cmd.run_export_dpo(args.traces, args.output, args.threshold, sys.stdout, sys.stderr)
            return learn_cmd.run_export_stats(args.traces, args.json, sys.stdout, sys.stderr)
    except SelfixError as exc:
        print(f"selfix: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("selfix: interrupted; the working tree was not changed", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`selfix junit report.xml | head`): no traceback; stdout goes nowhere from now on,
        # so the interpreter's own flush at exit cannot fail again (the recipe of Python's signal docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    raise AssertionError(f"unhandled command {args.command}")


def run_bench(argv: Sequence[str]) -> int:
    """``selfix bench ARGS``: the benchmark package's entry point, or a clear error where it is not installed."""
    try:
        bench = importlib.import_module(BENCH_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name not in ("selfix_bench", BENCH_MODULE):
            raise  # the benchmark is there but lacks a dependency: its own traceback says which
        raise InputError(BENCH_MISSING) from exc
    code: int = bench.main(argv, _Parser)
    return code


if __name__ == "__main__":
    sys.exit(main())
