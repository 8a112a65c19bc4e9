"""The engine flags, declared once for every command that heals (``selfix fix``, ``selfix bench``), and the
``EngineChoice`` they make."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from selfix_action.heal.request import EngineChoice, price_pair, read_price_table

ENGINE_KINDS = ("offline", "anthropic", "openai", "auto")


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """The LLM engines' flags (model, server, budgets, structured answers), as one argument group."""
    llm = parser.add_argument_group("LLM engines")
    llm.add_argument("--model", help="model name (default per provider)")
    llm.add_argument("--base-url", help="API base URL (default: ANTHROPIC_BASE_URL / OPENAI_BASE_URL)")
    llm.add_argument("--api-key", help="API key (default: ANTHROPIC_API_KEY / OPENAI_API_KEY)")
    llm.add_argument("--max-calls", type=int, default=40, help="model calls at most (40; 0: no cap)")
    llm.add_argument("--max-tokens", type=int, default=400_000, help="input+output tokens at most (400000)")
    llm.add_argument("--max-cost", type=float, default=2.0, help="US dollars at most (2.0)")
    llm.add_argument("--prices", type=Path, help="YAML/JSON price table overriding the built-in one")
    llm.add_argument(
        "--price-per-mtok-in",
        type=float,
        metavar="USD",
        help="this run's model's price per million input tokens (with --price-per-mtok-out; needed for --max-cost "
        "when the model is not in the price table; 0 for a local server)",
    )
    llm.add_argument("--price-per-mtok-out", type=float, metavar="USD", help="its price per million output tokens")
    llm.add_argument("--max-retry-wait", type=float, default=30.0, help="longest single wait before a retry (30s)")
    llm.add_argument("--request-timeout", type=float, default=120.0, help="wall seconds per model request (120)")
    llm.add_argument(
        "--structured",
        default="auto",
        choices=["auto", "tools", "json-schema", "json"],
        help="how answers are structured: tool calls, a JSON Schema the server enforces, or JSON asked for in the "
        "prompt (auto: tools, stepping down when the server ignores them)",
    )
    llm.add_argument(
        "--max-output-tokens", type=int, default=0, help="output tokens per answer at most (0: the roles' defaults)"
    )
    llm.add_argument("--samples", type=int, default=1, help="Patcher answers per hypothesis if the budget allows (1)")
    llm.add_argument(
        "--max-asks",
        type=int,
        default=8,
        help="asks for more context (a file's lines, a definition, a search) the model may make per heal (8; 0: none)",
    )
    llm.add_argument("--provider", choices=["anthropic", "openai"], help="the LLM engine --engine auto falls back to")
    llm.add_argument(
        "--replay",
        type=Path,
        metavar="TRACE",
        help="replay the model answers recorded in a trace.jsonl instead of calling a model (selfix bench: a "
        "folder of transcripts named TASK.jsonl)",
    )
    llm.add_argument(
        "--replay-then-server",
        action="store_true",
        help="with --replay: once the recorded answers run out, the server at --base-url answers (the calls a "
        "recording made before a role existed)",
    )
    llm.add_argument(
        "--offline-candidates",
        type=int,
        default=100,
        help="--engine auto: candidates the offline engine may try before the LLM engine is asked (100)",
    )


def engine_choice(args: argparse.Namespace, kind: str, env: Mapping[str, str]) -> EngineChoice:
    """The ``EngineChoice`` for ``kind`` from the flags of ``add_llm_arguments`` (keys and base URLs not given
    as flags are looked up in ``env``)."""
    return EngineChoice(
        kind=kind,
        model=args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        max_calls=args.max_calls,
        max_tokens=args.max_tokens,
        max_cost_usd=args.max_cost,
        prices=read_price_table(args.prices, "--prices") if args.prices and kind != "offline" else None,
        price=price_pair(
            args.price_per_mtok_in, args.price_per_mtok_out, ("--price-per-mtok-in", "--price-per-mtok-out")
        ),
        max_retry_wait=args.max_retry_wait,
        request_timeout=args.request_timeout,
        structured=args.structured,
        samples=args.samples,
        max_asks=args.max_asks,
        max_output_tokens=args.max_output_tokens,
        provider=args.provider or "",
        offline_candidates=args.offline_candidates,
        replay=args.replay,
        replay_then_server=args.replay_then_server,
        env=dict(env),
    )
