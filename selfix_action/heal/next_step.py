"""What to try next after a heal that did not end in a fix: one decision from the outcome, rendered by every
front end (the console, report.md, the job summary, the escalation comment) from ``HealReport.next_step``.

The advice names settings the way the front end that ran spells them: ``CLI_OPTIONS`` (``selfix fix``'s flags,
the default) or the action's inputs (``HealRequest.option_names``). A placeholder in braces takes this run's
value or a suggested one (``{seconds:g}``, ``{minutes:g}``, ``{value:g}``); a setting a front end does not offer
is absent from its table and the advice leaves that step out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from selfix_action.heal.request import HealRequest
from selfix_action.repair.report import HealReport, StopReason

# selfix fix's flags.
CLI_OPTIONS: dict[str, str] = {
    "engine_auto": "`selfix fix --engine auto` with ANTHROPIC_API_KEY (or OPENAI_API_KEY) set",
    "local_server": (
        "`selfix fix --engine auto --provider openai --base-url http://127.0.0.1:11434/v1 --api-key local "
        "--model qwen2.5-coder:7b --price-per-mtok-in 0 --price-per-mtok-out 0` (any OpenAI-compatible server: "
        "Ollama, llama.cpp, vLLM)"
    ),
    "max_candidates": "`--max-candidates {value:g}`",
    "time_limit": "`--time-limit {seconds:g}`",
    "hypotheses": "`--hypotheses {value:g}`",
    "samples": "`--samples 2`",
    "model": "`--model`",
    "hint": '`--hint "<where you think the bug is>"`',
    "max_calls": "`--max-calls {value:g}`",
    "max_tokens": "`--max-tokens {value:g}`",
    "max_cost": "`--max-cost {value:g}`",
    "test_timeout": "`--test-timeout {seconds:g}`",
    "isolation_none": "`--isolation none` (on a machine you trust)",
    "test_command": "`--test-cmd`",
    "dependencies": "install the project's dependencies into the environment of `--test-cmd` (e.g. `pip install -e .`)",
    "junit": "`--junit` with the report of this commit's run",
    "heal_seen_failures": "`--heal-seen-failures`",
    "working_directory": "`--working-directory <the folder your CI runs pytest in>`",
    "llm_setup": "the key, `--base-url` and `--model`",
}


def next_step(report: HealReport, request: HealRequest) -> str:
    """One or two sentences on what to try next, specific to why the heal stopped; "" when healed or there was
    nothing to heal."""
    options = {**CLI_OPTIONS, **request.option_names}
    reason = report.stop_reason
    if reason in (StopReason.HEALED, StopReason.NO_FAILING_TESTS):
        return ""
    if report.llm_problem and reason is not StopReason.REPORT_MISMATCH:
        return _join(
            f"Fix the LLM engine's setup ({_say(options, 'llm_setup')}) and run again: {report.llm_problem}",
        )
    advice = _ADVICE.get(reason)
    return advice(report, request, options) if advice is not None else ""


def with_next_step(report: HealReport, request: HealRequest) -> HealReport:
    """``report`` with its ``next_step`` decided."""
    return report.model_copy(update={"next_step": next_step(report, request)})


def _say(options: Mapping[str, str], key: str, **values: Any) -> str:
    """The front end's spelling of ``key`` with ``values`` filled in, or "" when it has no such setting."""
    text = options.get(key, "")
    return text.format(**values) if text else ""


def _join(*parts: str) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def _offline_only(report: HealReport) -> bool:
    return report.engine == "offline"


def _try_llm(options: Mapping[str, str]) -> str:
    auto, local = _say(options, "engine_auto"), _say(options, "local_server")
    if not auto:
        return ""
    return f"Try the LLM engine after the offline one: {auto}" + (f", or a local server: {local}." if local else ".")


def _more_llm_room(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    steps = [
        _say(options, "hypotheses", value=request.loop.max_hypotheses + 2),
        _say(options, "samples"),
        (f"a stronger {_say(options, 'model')}" if _say(options, "model") else ""),
        _say(options, "hint"),
    ]
    chosen = [s for s in steps if s]
    return ("Give the LLM engine more room: " + ", ".join(chosen) + ".") if chosen else ""


def _searched(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    """Every hypothesis tried (or the same edit again): a stronger engine, or more room for the one that ran."""
    if _offline_only(report):
        return _join("The offline engine's repair templates found no fix.", _try_llm(options))
    return _more_llm_room(report, request, options)


def _candidate_budget(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    more = _say(options, "max_candidates", value=request.loop.max_candidates * 2)
    raise_it = f"Raise the candidate budget ({request.loop.max_candidates} this run): {more}." if more else ""
    return _join(raise_it, _try_llm(options) if _offline_only(report) else "")


def _time(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    seconds = request.loop.time_limit_seconds * 2
    more = _say(options, "time_limit", seconds=seconds, minutes=seconds / 60)
    limit = f"{request.loop.time_limit_seconds:g} s"
    return f"Give the heal more time ({limit} this run): {more}." if more else ""


def _unconfirmed(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    return _join(
        "Review patch.diff before applying it: it passed the failing tests and the passing tests that run its "
        "code, but the whole suite never ran on it.",
        _time(report, request, options).replace("Give the heal more time", "To confirm it, give the heal more time"),
    )


def _test_runs(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    narrow = _say(options, "test_command")
    return (
        f"The test-run budget ({request.loop.max_test_runs} runs) ran out: point {narrow} at the part of the suite "
        "that covers the failure (e.g. `python -m pytest tests/unit`) so each run is cheaper."
        if narrow
        else f"The test-run budget ({request.loop.max_test_runs} runs) ran out."
    )


def _engine_budget(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    """Raise the cap that stopped it: the usage says which one was reached."""
    usage, limits = report.usage, report.usage.limits
    caps: tuple[tuple[str, float, float, str], ...] = (
        ("max_cost", usage.cost_usd, limits.max_cost_usd, "dollar"),
        ("max_tokens", usage.tokens, limits.max_tokens, "token"),
        ("max_calls", usage.calls, limits.max_calls, "call"),
    )
    for key, spent, cap, word in caps:
        if cap > 0 and spent >= cap:
            more = _say(options, key, value=cap * 2)
            if more:
                return f"The LLM engine's {word} cap ({cap:g}) was reached: raise it, {more}."
            return f"The LLM engine's {word} cap ({cap:g}) was reached."
    steps = [s for s in (_say(options, k, value=0) for k in ("max_calls", "max_tokens", "max_cost")) if s]
    return "Raise the LLM engine's budget" + (f" ({', '.join(steps)} is no cap)." if steps else ".")


def _model_error(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    return (
        f"The model could not be used (the provider's error is in the notes): check {_say(options, 'llm_setup')}, "
        "then run again."
    )


def _environment(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    deps = _say(options, "dependencies")
    return _join(
        "Fix the environment the tests run in, as the report's diagnosis says (a missing package, service, file or "
        "variable): "
        "no code change makes them pass.",
        f"For a missing package: {deps}." if deps else "",
    )


def _sandbox_error(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    timeout = _say(options, "test_timeout", seconds=request.limits.wall_seconds * 2)
    command = " ".join(request.test_cmd[-3:]) if request.test_cmd else "python -m pytest"
    return _join(
        f"Check that the test command (`{command}`, {_say(options, 'test_command') or 'the test command'}) runs "
        "the suite from the repository root and that the tests named in the notes exist at this commit.",
        f"If runs were cut short by the per-run limit ({request.limits.wall_seconds:g} s), raise it: {timeout}."
        if timeout
        else "",
        f"To see whether isolation is the cause, run once with {_say(options, 'isolation_none')}."
        if _say(options, "isolation_none")
        else "",
    )


def _only_sandbox(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    deps = _say(options, "dependencies")
    return _join(
        "The tests fail only inside selfix's sandbox: check what they need that it withholds (the network, files "
        "outside the repository, environment variables, installed packages).",
        f"{deps[:1].upper()}{deps[1:]}." if deps else "",
        f"To see whether isolation is the cause, run once with {_say(options, 'isolation_none')}."
        if _say(options, "isolation_none")
        else "",
    )


def _not_reproducible(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    return (
        "The failing tests passed when re-run here (flaky): look for order, time, randomness or network "
        "dependence; selfix heals only failures it can reproduce."
    )


def _subfolder(report: HealReport, options: Mapping[str, str]) -> str:
    """The advice for a project that may live in a subfolder selfix did not find, "" when it ran in one."""
    folder = _say(options, "working_directory")
    if report.project_folder or not folder:
        return ""
    return f" If the project lives in a subfolder of the repository (a monorepo), name it with {folder}."


def _no_suspects(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    return (
        "The failing tests reach no line of the project's source here: check that the test command imports this "
        "checkout's code (not an installed copy in site-packages: `pip install -e .`) and that the code is not "
        "in a folder selfix skips (build/, dist/, a virtual environment)." + _subfolder(report, options)
    )


def _mismatch(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    junit, seen = _say(options, "junit"), _say(options, "heal_seen_failures")
    parts = [f"Give {junit}" if junit else "Give the JUnit report of this commit's run"]
    if seen and report.seen_failures:
        parts.append(f"or heal the {len(report.seen_failures)} failure(s) seen here with {seen}")
    return ", ".join(parts) + "." + _subfolder(report, options)


def _hung(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    timeout = _say(options, "test_timeout", seconds=request.limits.wall_seconds * 4)
    slow = f"If they are only slow, raise the test-run limit ({timeout}); if" if timeout else "If"
    return (
        f"{slow} they hang on this commit, the hang is the bug: run one of them locally with a debugger or "
        "`python -X faulthandler -m pytest <test>` to see where it waits."
    )


def _not_reproduced(report: HealReport, request: HealRequest, options: Mapping[str, str]) -> str:
    record = report.reported_error
    if record is not None and not record.site:
        return (
            "None of the error's frames is a file of this checkout: check that the error comes from this "
            "repository and that its project folder is the one healed (the working directory)."
        )
    return (
        "No test reproduced the error (each attempt is listed): give QA what production knew, a Sentry event with "
        "its frames' local variables, or the failing request's input in the error text; or write a test that fails "
        "with it and heal that test's failure from its JUnit report."
    )


_ADVICE = {
    StopReason.ERROR_NOT_REPRODUCED: _not_reproduced,
    StopReason.ONLY_HUNG_TESTS: _hung,
    StopReason.VERIFIED_UNCONFIRMED: _unconfirmed,
    StopReason.REPORT_MISMATCH: _mismatch,
    StopReason.NOT_REPRODUCIBLE: _not_reproducible,
    StopReason.ONLY_SANDBOX_FAILURES: _only_sandbox,
    StopReason.NO_SUSPECTS: _no_suspects,
    StopReason.HYPOTHESES_EXHAUSTED: _searched,
    StopReason.REPEATED_EDIT: _searched,
    StopReason.CANDIDATE_BUDGET: _candidate_budget,
    StopReason.TEST_RUN_BUDGET: _test_runs,
    StopReason.TIME_LIMIT: _time,
    StopReason.BUDGET_EXHAUSTED: _engine_budget,
    StopReason.MODEL_ERROR: _model_error,
    StopReason.SANDBOX_ERROR: _sandbox_error,
    StopReason.ENVIRONMENT: _environment,
}
