"""Answering the file bridge (``../shared/tools/model_bridge.py``) by hand: how a capable reader serves the LLM path.

The bridge writes each chat request to ``DIR/req-NNN.json`` and waits for ``DIR/resp-NNN.json``. A reader (a helper
session told to read nothing but the request) answers with this tool, which shows a request as a model would read
it and checks an answer against the request's JSON schema the way a server enforcing it would, before writing it:

    python -m selfix_bench.bridge pending DIR            # the requests still waiting for an answer
    python -m selfix_bench.bridge show DIR N             # request N: its messages and the schema to answer in
    python -m selfix_bench.bridge next DIR               # claim the oldest unclaimed request and show it (exit 3: none)
    python -m selfix_bench.bridge answer DIR N FILE      # FILE: the answer's JSON object; checked, then written

An answer that does not fit the schema is refused with the reason (exit 2) and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema


def _request(folder: Path, number: int) -> dict[str, Any]:
    value = json.loads((folder / f"req-{number:03d}.json").read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"req-{number:03d}.json is not a JSON object")
    return value


def pending(folder: Path) -> list[int]:
    """The numbers of the requests that have no answer yet, oldest first."""
    found = []
    for path in sorted(folder.glob("req-*.json")):
        number = int(path.stem.split("-", 1)[1])
        if not (folder / f"resp-{number:03d}.json").exists():
            found.append(number)
    return found


def claim(folder: Path) -> int | None:
    """The oldest pending request no reader has claimed yet, now claimed (an atomic mkdir: readers sharing a
    bridge never answer the same request twice); None when there is none."""
    for number in pending(folder):
        try:
            (folder / f"claim-{number:03d}").mkdir()
        except FileExistsError:
            continue
        return number
    return None


def expected(request: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """("content" or "tool", the tool's name or the schema's, the JSON schema the answer must fit)."""
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        return "content", str(spec.get("name", "")), dict(spec.get("schema") or {})
    tools = request.get("tools") or []
    if tools:
        function = tools[0].get("function") or {}
        return "tool", str(function.get("name", "")), dict(function.get("parameters") or {})
    return "content", "", {}


def show(request: dict[str, Any]) -> str:
    kind, name, schema = expected(request)
    parts = []
    for message in request.get("messages", []):
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, indent=1)
        parts.append(f"===== {message.get('role', '?')} =====\n{text}")
    # Compact: the schemas are most of a request, and a reader's tool cuts a long output (readers lost code to it).
    parts.append(f"===== answer as: {kind} {name} =====\n{json.dumps(schema, separators=(',', ':'))}")
    return "\n\n".join(parts)


def schema_problem(error: jsonschema.ValidationError) -> str:
    """Where and why an answer fails its schema. For a value that must match one of several schemas (the
    per-file ``anyOf`` of an edit), each branch's own first problem: "matched none of the schemas" alone does not
    say that a text is 12 characters over its limit."""
    where = "/".join(str(p) for p in error.absolute_path) or "(top)"
    branches = list(
        dict.fromkeys(
            f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message[:200]}" for e in error.context or ()
        )
    )
    if branches:
        return f"at {where}, no alternative fits; " + "; ".join(branches[:4])
    return f"at {where}: {error.message}"


def answer(folder: Path, number: int, value: Any) -> dict[str, Any]:
    """The bridge's answer file for ``value``, checked against request ``number``'s schema (ValueError if not)."""
    kind, name, schema = expected(_request(folder, number))
    if schema:
        # Not jsonschema.validate: its best match descends into one alternative of an anyOf and names only that
        # one's problem ("'b.py' was expected"), hiding the one that matters.
        validator = jsonschema.validators.validator_for(schema)(schema)
        first = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))), None)
        if first is not None:
            raise ValueError(f"the answer does not fit the schema: {schema_problem(first)}")
    if kind == "tool":
        return {"tool_calls": [{"name": name, "arguments": value}]}
    return {"content": json.dumps(value)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfix_bench.bridge", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("pending").add_argument("dir", type=Path)
    sub.add_parser("next").add_argument("dir", type=Path)
    shown = sub.add_parser("show")
    shown.add_argument("dir", type=Path)
    shown.add_argument("number", type=int)
    given = sub.add_parser("answer")
    given.add_argument("dir", type=Path)
    given.add_argument("number", type=int)
    given.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "pending":
            print(" ".join(str(n) for n in pending(args.dir)))
        elif args.command == "next":
            number = claim(args.dir)
            if number is None:
                return 3
            print(f"REQUEST {number}\n\n" + show(_request(args.dir, number)))
        elif args.command == "show":
            print(show(_request(args.dir, args.number)))
        else:
            value = json.loads(args.file.read_text(encoding="utf-8"))
            body = answer(args.dir, args.number, value)
            target = args.dir / f"resp-{args.number:03d}.json"
            temporary = target.with_suffix(".tmp")
            temporary.write_text(json.dumps(body), encoding="utf-8")
            temporary.rename(target)
            print(f"wrote {target.name}")
    except (OSError, ValueError) as exc:
        print(f"bridge: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
