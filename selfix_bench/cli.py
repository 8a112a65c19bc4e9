"""``selfix bench``: its arguments and its entry point.

The product's CLI (``selfix_action/cli.py``) hands every ``selfix bench ...`` argument list to ``main`` here; the
benchmark is a package of its own, installed by a source install (``pip install -e .``) and absent from the action's
image. ``python -m selfix_bench ...`` runs the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from selfix_action.commands.engine_args import ENGINE_KINDS, add_llm_arguments, engine_choice
from selfix_action.errors import InputError
from selfix_bench import addopts, serve_load
from selfix_bench.field import add_field_arguments, run_field_command
from selfix_bench.recall import add_recall_arguments, options_from, run_recall
from selfix_bench.runner import BenchOptions, read_records, run_bench

HELP = "run benchmark tasks (bench/tasks) and report the resolve rate"


def main(argv: Sequence[str], parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> int:
    """``selfix bench ARGS`` (``ARGS`` without ``bench``); ``recall`` or ``field`` first: ``selfix bench recall ...``,
    ``selfix bench field ...`` (the field corpus, selfix_bench/field.py).

    Errors the user can act on are raised as ``SelfixError`` for the caller to print with its exit code."""
    arguments = list(argv)
    if arguments[:1] == ["recall"]:  # a command of its own under bench, beside bench's TASKS argument
        return run_recall_command(arguments[1:], parser_class)
    if arguments[:1] == ["addopts"]:  # the project's pytest addopts: heal time with and without (addopts.py)
        return addopts.main(arguments[1:], parser_class)
    if arguments[:1] == ["serve-load"]:  # selfix serve under signed load, kill -9 mid-load (serve_load.py)
        return serve_load.main(arguments[1:], parser_class)
    if arguments[:1] == ["field"]:
        field = parser_class(
            prog="selfix bench field",
            description="the field corpus: real projects at pinned commits, run as their CI runs them, healed",
        )
        add_field_arguments(field)
        return run_field_command(field.parse_args(arguments[1:]))
    parser = parser_class(prog="selfix bench", description=HELP)
    add_bench_arguments(parser)
    return run_bench_command(parser.parse_args(arguments))


def add_bench_arguments(bench: argparse.ArgumentParser) -> None:
    bench.add_argument(
        "tasks",
        nargs="?",
        default="bench/tasks",
        type=Path,
        help="task directory or file (selfix bench recall --help: the context recall of the LLM engine's requests; "
        "selfix bench addopts --help: heal time with a project's pytest addopts and without)",
    )
    bench.add_argument("--out", type=Path, default=Path("results"), help="results root (default: results)")
    bench.add_argument("--run", default="", help="run name: results go to OUT/RUN (default: the mode)")
    bench.add_argument(
        "--engine",
        default="offline",
        help=f"{', '.join(ENGINE_KINDS)} (the flags below, as for selfix fix), or module:factory (default: offline)",
    )
    mode = bench.add_mutually_exclusive_group()
    mode.add_argument("--oracle", action="store_true", help="apply the reference fix (must resolve all)")
    mode.add_argument("--noop", action="store_true", help="change nothing (must resolve none)")
    bench.add_argument("--workers", type=int, default=2, help="tasks in parallel (2)")
    bench.add_argument("--time-limit", type=float, default=300.0, help="seconds per task for the tool (300)")
    bench.add_argument("--max-candidates", type=int, default=500, help="candidates per task at most (500)")
    bench.add_argument("--limit", type=int, default=0, help="only the first N tasks (0: all)")
    bench.add_argument("--compare", type=Path, help="another run's folder: paired comparison (exact McNemar)")
    bench.add_argument(
        "--mirror-dir", type=Path, help="local git mirrors for real-bug tasks (owner+name/repo); else their URLs"
    )
    bench.add_argument(
        "--isolation",
        default="none",
        choices=["auto", "bwrap", "landlock", "unshare", "none"],
        help="the heals' sandbox isolation (none: our pinned tasks, figures comparable across machines)",
    )
    bench.add_argument(
        "--junit",
        action="store_true",
        help="give each heal the CI's JUnit report of its task (its F2P failing, its P2P passing), as the action "
        "gets it; without it selfix runs the tests and takes every failing one as a target",
    )
    bench.add_argument(
        "--from-traceback",
        action="store_true",
        help="heal each real bug from its failing test's traceback alone, as production reports an error (the "
        "test's frames dropped, deployment paths): selfix fix --from-error, no failing test named, no bug report",
    )
    add_llm_arguments(bench)


def run_bench_command(args: argparse.Namespace) -> int:
    if args.workers < 1 or args.time_limit <= 0 or args.max_candidates < 1 or args.limit < 0:
        raise InputError("--workers, --time-limit and --max-candidates must be positive")
    if args.mirror_dir is not None and not args.mirror_dir.is_dir():
        raise InputError(f"no such mirror directory: {args.mirror_dir}")
    if not args.tasks.exists():
        raise InputError(f"no such task directory: {args.tasks}")
    mode = "oracle" if args.oracle else "noop" if args.noop else args.engine
    if mode not in (*ENGINE_KINDS, "oracle", "noop") and ":" not in mode:
        raise InputError(f"unknown engine {mode!r} (use {', '.join(ENGINE_KINDS)} or module:factory)")
    engine_json = ""
    if mode in ENGINE_KINDS and mode != "offline":
        choice = engine_choice(args, mode, {})  # checked here; keys and base URLs are the workers' to look up
        fields = {f.name: getattr(choice, f.name) for f in dataclasses.fields(choice)}
        if choice.replay is not None:
            if not choice.replay.is_dir():
                raise InputError(f"--replay for selfix bench is a folder of TASK.jsonl transcripts: {choice.replay}")
            fields["replay"] = str(choice.replay.resolve())
        engine_json = json.dumps({k: v for k, v in fields.items() if k not in ("kind", "env", "api_key")})
    options = BenchOptions(
        tasks=args.tasks,
        out=args.out,
        run=args.run,
        mode=mode,
        workers=args.workers,
        time_limit=args.time_limit,
        max_candidates=args.max_candidates,
        compare=args.compare,
        limit=args.limit,
        mirror_dir=args.mirror_dir,
        engine_json=engine_json,
        isolation=args.isolation,
        api_key=args.api_key or "",
        junit=args.junit,
        from_traceback=args.from_traceback,
    )
    run_dir = run_bench(options, log=lambda m: print(m, flush=True))
    print((run_dir / "report.md").read_text(encoding="utf-8").split("\n## Tasks")[0])
    records = read_records(run_dir / "results.jsonl")
    resolved = sum(1 for r in records if r.get("resolved"))
    print(f"wrote {run_dir}/results.jsonl, report.md, chart.svg", file=sys.stderr)
    if mode == "oracle":
        return 0 if resolved == len(records) else 1
    if mode == "noop":
        return 0 if resolved == 0 else 1
    return 0


def run_recall_command(argv: Sequence[str], parser_class: type[argparse.ArgumentParser]) -> int:
    """``selfix bench recall TASKS``: the share of the developers' fix hunks the Detective's and the Patcher's
    requests show (selfix_bench/recall.py), measured with no model."""
    parser = parser_class(
        prog="selfix bench recall",
        description="context recall: the developers' fix hunks the LLM engine's requests show, with no model",
    )
    add_recall_arguments(parser)
    run_recall(options_from(parser.parse_args(argv)), log=lambda m: print(m, flush=True))
    return 0
