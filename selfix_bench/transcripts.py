"""A benchmark run's transcripts as answers only: what a replay needs, without the prompts.

    python -m selfix_bench.transcripts results/<run>/transcripts docs/bench-results/<run>-answers

Each task's trace keeps every prompt (with the project's code in it) and every answer. A replay
(``selfix bench --replay DIR``, ``models.replay``) reads only the answers: the role, the tool, the answer's text,
its token counts and structured mode. This keeps those, one file per task, so a run's answers can be kept beside
its results and replayed as a regression check of the LLM path, without the third-party code of the prompts.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

ANSWER_FIELDS = ("step", "role", "tool", "model", "structured", "response", "usage", "seconds")


def answers_only(trace: str) -> str:
    """The header and the ``model_call`` events of a trace, each with only the fields a replay reads."""
    kept = []
    for line in trace.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("record") == "header":
            kept.append({k: event[k] for k in ("record", "schema_version", "engine", "selfix_version") if k in event})
        elif event.get("step") == "model_call":
            kept.append({k: event[k] for k in ANSWER_FIELDS if k in event})
    return "".join(json.dumps(event) + "\n" for event in kept)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a run's transcripts folder (TASK.jsonl files)")
    parser.add_argument("dest", type=Path, help="the folder to write the answers-only files to")
    args = parser.parse_args(argv)
    files = sorted(args.source.glob("*.jsonl"))
    if not files:
        print(f"no transcripts (*.jsonl) in {args.source}", file=sys.stderr)
        return 2
    args.dest.mkdir(parents=True, exist_ok=True)
    for path in files:
        (args.dest / path.name).write_text(answers_only(path.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {len(files)} answers-only transcript(s) to {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
