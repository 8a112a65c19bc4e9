"""The heal pipeline: a ``HealRequest`` in, a ``HealOutcome`` out.

Order of work, the same for every front end:

1. the JUnit reports, parsed once, give the fail-to-pass and pass-to-pass sets (none failing: nothing to heal);
2. the engine is built with its hooks (trace, memory) and the isolation detected: everything that can be
   refused is refused before any output is written; then the setup command runs, if there is one;
3. the output folder, ``trace.jsonl`` and the memory of past fixes;
4. sandbox (scratch copy, best isolation available) + healing loop (``heal_in_sandbox``, the step tests may swap);
5. the outcome is traced, the memory learns from the run, and the report files are written.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from selfix_action.errors import ExitCode, InputError, SandboxError
from selfix_action.heal.engines import auto_provider, build_engine
from selfix_action.heal.next_step import with_next_step
from selfix_action.heal.outputs import (
    OutputPaths,
    TraceWriter,
    inside,
    no_links,
    out_dir_refusal,
    prepare_out_dir,
    write_report_files,
)
from selfix_action.heal.project import in_repository, node_project, project_folder, project_patterns
from selfix_action.heal.reproduction_file import ReproductionFile, reproduction_file
from selfix_action.heal.request import HealRequest
from selfix_action.junit import Outcome, TestCaseResult, parse_reports
from selfix_action.learn.hooks import learn_from_run, open_memory, outcome_fields, trace_header
from selfix_action.learn.memory import Memory
from selfix_action.repair.loop import HealingLoop, HealResult
from selfix_action.repair.protocols import Engine
from selfix_action.repair.report import STOP_EXPLANATIONS, HealReport, StopReason
from selfix_action.repair.reported import ReportedTest
from selfix_action.repair.reported_error import Reproducer
from selfix_action.sandbox.isolation import Isolation, detect_isolation
from selfix_action.sandbox.node_sandbox import NodeSandbox
from selfix_action.sandbox.pytest_sandbox import PytestSandbox, is_python
from selfix_action.sandbox.setup import SetupResult, project_env_source, run_setup_command
from selfix_action.toolchains.node import NodeProject, reported_name, test_command

Trace = Callable[..., None]
Warn = Callable[[str], None]


def default_jobs() -> int:
    """Candidates checked side by side by default: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


@dataclass(frozen=True)
class HealContext:
    """Everything the sandbox-and-loop step gets: the request and what the pipeline prepared for it."""

    request: HealRequest
    engine: Engine
    isolation: Isolation
    trace: Trace
    memory: Memory | None
    junit_failing: tuple[ReportedTest, ...]  # the CI report's tests, resolved against the checkout by the loop
    junit_passing: tuple[ReportedTest, ...]
    node: NodeProject | None = None  # a JavaScript/TypeScript project: its tests run on the Node sandbox
    reproduction: ReproductionFile | None = None  # --from-error: the new test file the reported error goes in

    @property
    def repo(self) -> Path:
        return self.request.repo

    @property
    def junit(self) -> tuple[Path, ...]:
        return self.request.junit

    @property
    def hint(self) -> str:
        return self.request.hint


Healer = Callable[[HealContext], HealResult]


@dataclass(frozen=True)
class HealOutcome:
    """What one heal gave: the report, the verified files (None unless healed) and the files written."""

    result: HealResult
    paths: OutputPaths | None  # None when nothing ran (the JUnit reports show no failing test)
    warnings: tuple[str, ...] = ()
    memory_recorded: bool = False  # the memory of past fixes learned from this run

    @property
    def report(self) -> HealReport:
        return self.result.report

    @property
    def healed(self) -> bool:
        return self.report.stop_reason is StopReason.HEALED and self.result.files is not None

    @property
    def status(self) -> str:
        """The action's status output: healed, not_healed or nothing_to_heal."""
        return heal_status(self.report, patched=self.result.files is not None)

    @property
    def exit_code(self) -> int:
        return self.report.exit_code


def heal_status(report: HealReport, *, patched: bool) -> str:
    """The action's status output for a heal's report: healed (a heal with its verified files, ``patched``),
    nothing_to_heal (the stops that exit 3) or not_healed. The same for a heal just run (``HealOutcome``) and
    for one read back from a bundle (``selfix publish``)."""
    if report.stop_reason is StopReason.HEALED and patched:
        return "healed"
    if report.exit_code == StopReason.NO_FAILING_TESTS.exit_code:
        return "nothing_to_heal"
    return "not_healed"


def open_sandbox(
    request: HealRequest, isolation: Isolation, node: NodeProject | None = None
) -> PytestSandbox | NodeSandbox:
    """The scratch copy of ``request``'s repository its test runs use, within ``isolation`` (a context manager):
    pytest's, or for a Node project (``node``) the runner its package.json names."""
    if node is not None:
        return NodeSandbox(
            request.repo,
            request.test_cmd,
            node,
            limits=request.limits,
            env_source=request.env_source,
            isolation=isolation,
        )
    return PytestSandbox(
        request.repo,
        request.test_cmd,
        limits=request.limits,
        env_source=request.env_source,
        isolation=isolation,
        parallel_checks=request.jobs or default_jobs(),
        line_collector=request.line_collector,
    )


def heal_in_sandbox(context: HealContext) -> HealResult:
    """Heal on a scratch copy; the report says which isolation every test run had and how the runs ran."""
    request = context.request
    isolation = context.isolation
    context.trace("sandbox", isolation.summary(), isolation=isolation.report())
    with open_sandbox(request, isolation, context.node) as sandbox:
        config = request.loop.model_copy(update={"allow_ports": request.isolation.allow_ports})
        loop = HealingLoop(sandbox, context.engine, config, trace=context.trace, repo_label=request.repo_label)
        if request.reported_error is not None and context.reproduction is not None:
            reproducer = context.engine
            assert isinstance(reproducer, Reproducer)  # heal() refused an engine that writes no tests
            file = context.reproduction
            result = loop.heal_reported(request.reported_error, reproducer, file.path, file.imports)
        else:
            result = loop.run(context.junit_failing, context.junit_passing)
        limits = sandbox.limits_report()
        process_runs = {
            "hot": sandbox.hot_runs,
            "warm": sandbox.warm_runs - sandbox.hot_runs,
            "cold": sandbox.runs - sandbox.warm_runs,
        }
        overrides = sandbox.config_overrides
    notes = result.report.notes
    if isolation.warnings:
        notes = (*notes, isolation.summary())
    report = result.report.model_copy(
        update={
            "isolation": {**isolation.report(), "limits": limits},
            "notes": notes,
            "process_runs": process_runs,
            "pytest_overrides": overrides,
        }
    )
    return dataclasses.replace(result, report=report)


Reported = tuple[ReportedTest, ...]


def _reported_test(case: TestCaseResult) -> ReportedTest:
    return ReportedTest(case.classname, case.name, case.file, case.nodeid)


def node_reported(runner: str) -> Callable[[TestCaseResult], ReportedTest]:
    """A Node runner's JUnit case as a reported test: its file when the report says, its full title."""

    def name(case: TestCaseResult) -> ReportedTest:
        named = reported_name(runner, case)
        return ReportedTest("", case.name, named.file, None, full_title=named.full_title)

    return name


def reported_cases(paths: Sequence[Path], *, strict: bool, warn: Warn) -> list[TestCaseResult]:
    """The named cases of JUnit reports, each file parsed once. ``strict``: an unreadable or hostile file is bad
    input; otherwise it is skipped with a warning."""
    for path in paths:
        if not path.is_file():
            raise InputError(f"JUnit report not found: {path}")
    report = parse_reports(list(paths))
    if report.errors:
        if strict:
            details = "; ".join(f"{e.path}: {e.reason}" for e in report.errors)
            raise InputError(f"{len(report.errors)} JUnit report(s) could not be read: {details}")
        for error in report.errors:
            warn(f"skipping JUnit file {Path(error.path).name}: {error.reason}")
    return [c for c in report.cases if c.name]  # a nameless case names no test


def split_cases(
    cases: Sequence[TestCaseResult], *, warn: Warn, name: Callable[[TestCaseResult], ReportedTest] = _reported_test
) -> tuple[Reported, Reported]:
    """F2P (failed or errored cases) and P2P (passed cases), each named by ``name`` (pytest's way, or a Node
    runner's: ``node_reported``). The cases are resolved to node ids by the loop, against the tests collected in
    the checkout (``repair.reported``): pytest's naming rules cannot say which classname is a module."""
    failing = [c for c in cases if c.outcome in (Outcome.FAILED, Outcome.ERROR)]
    passing = [c for c in cases if c.outcome is Outcome.PASSED]
    # One test can appear in several reports (a rerun job, a matrix): failing in any run makes it F2P only.
    f2p = tuple(dict.fromkeys(name(c) for c in failing))
    failing_keys = {(c.classname, c.name) for c in failing}
    flaky = sorted(
        {
            name(c).label
            for c in cases
            if (c.classname, c.name) in failing_keys and (c.flaky or c.outcome is Outcome.PASSED)
        }
    )
    if flaky:
        shown = ", ".join(flaky[:3]) + (f" and {len(flaky) - 3} more" if len(flaky) > 3 else "")
        warn(f"{len(flaky)} failing test(s) also passed in another run of the report(s) (flaky): {shown}")
    p2p = tuple(dict.fromkeys(name(c) for c in passing if (c.classname, c.name) not in failing_keys))
    return f2p, p2p


def failure_sets(paths: Sequence[Path], *, strict: bool, warn: Warn) -> tuple[Reported, Reported]:
    """F2P and P2P from JUnit reports, named as pytest names tests (``reported_cases``, ``split_cases``)."""
    return split_cases(reported_cases(paths, strict=strict, warn=warn), warn=warn)


def _nothing_failing(request: HealRequest) -> HealOutcome:
    reason = StopReason.NO_FAILING_TESTS
    report = HealReport(
        repo=request.repo_label,
        engine=request.engine.kind,
        stop_reason=reason,
        explanation="the JUnit report(s) show no failing test: nothing to heal",
        exit_code=int(reason.exit_code),
        notes=(STOP_EXPLANATIONS[reason],),
    )
    return HealOutcome(HealResult(report=report, files=None), paths=None)


def heal(
    request: HealRequest,
    *,
    progress: TextIO | None = None,
    warn: Warn | None = None,
    setup_output: Callable[[str], None] | None = None,
    healer: Healer = heal_in_sandbox,
) -> HealOutcome:
    """Run one heal. ``progress`` gets a line per step; ``warn`` each warning (they are also in the outcome);
    ``setup_output`` the setup command's output (untrusted text).

    Bad input raises ``InputError`` before anything is written; the memory never fails a run."""
    warnings: list[str] = []

    def warned(message: str) -> None:
        if message not in warnings:
            warnings.append(message)
            if warn is not None:
                warn(message)

    repo = request.repo.resolve()
    if not repo.is_dir():
        raise InputError(f"not a directory: {request.repo}")
    refusal = out_dir_refusal(repo, request.out_dir)
    if refusal is not None:  # before anything runs or is written
        raise InputError(refusal)
    if request.reported_error is not None and request.junit:
        raise InputError("--from-error heals a reported error, --junit a failed run's tests: give one of them")
    cases = reported_cases(request.junit, strict=request.junit_strict, warn=warned)
    failing, passing = split_cases(cases, warn=warned)
    if request.junit and not failing:
        return dataclasses.replace(_nothing_failing(request), warnings=tuple(warnings))
    folder = project_folder(repo, request.working_directory, failing)
    if folder.note and not request.working_directory:
        warned(folder.note)  # found, not asked for: said where the user reads first
    # The heal runs on the project's folder as its CI runs it (its paths, its pytest rootdir); what leaves it is
    # put back in repository-relative paths (in_repository) below.
    project = _in_folder(request, repo, folder.path)
    node = node_project(project.repo, project.toolchain)
    if node is not None and request.reported_error is not None:
        raise InputError(
            "--from-error reads Python tracebacks and Sentry events of Python code; this is a JavaScript/TypeScript "
            "project (a package.json and no Python file): give its failing tests' JUnit report instead"
        )
    if node is not None:  # JavaScript/TypeScript: the same loop, on the Node half of the toolchain seam
        project = _for_node(project, node)
        failing, passing = split_cases(cases, warn=warned, name=node_reported(node.runner))
    # Everything that can be refused (a missing key, unavailable isolation, a linked output folder) is refused
    # before any output is written.
    out_dir = inside(request.repo, request.out_dir)
    memory_path = inside(request.repo, request.memory_path) if request.memory_path is not None else None
    trace = TraceWriter(out_dir / "trace.jsonl", progress, header=trace_header(request.repo_label, request.engine.kind))
    memory: Memory | None = None
    recorded = False
    engine_setup = build_engine(
        project.engine,
        hypotheses=request.loop.max_hypotheses,
        time_limit=request.loop.time_limit_seconds,
        protected_paths=request.loop.protected_paths,
        trace=trace,
        memory=(lambda: memory) if request.memory_path is not None else None,
    )
    engine = engine_setup.engine
    reproduction = None
    if request.reported_error is not None:
        if not isinstance(engine, Reproducer) or engine_setup.llm_problem:
            why = f" ({engine_setup.llm_problem})" if engine_setup.llm_problem else ""
            raise InputError(
                "healing a reported error needs an LLM engine: QA writes the test that reproduces it, and the "
                f"offline engine writes no tests{why}; choose the anthropic or openai engine, or auto with a model key"
            )
        reproduction = reproduction_file(project.repo, request.reported_error)
    if engine_setup.llm_problem:  # --engine auto: the offline engine heals alone, the problem is reported
        warned(engine_setup.llm_problem)
    isolation = detect_isolation(request.isolation)
    setup: SetupResult | None = None
    if project.setup_command:
        project, setup = _setup(project, project.repo, setup_output, isolation)
        for message in setup.warnings:
            warned(message)
    try:
        prepare_out_dir(repo, out_dir)
        trace.open()
        try:
            if memory_path is not None and not no_links(repo, memory_path):
                warned(f"memory disabled: {request.memory_path} goes through a symbolic link in the repository")
            elif memory_path is not None:
                memory = open_memory(memory_path, warned)
            context = HealContext(project, engine, isolation, trace, memory, failing, passing, node, reproduction)
            result = in_repository(healer(context), folder.path)
            if folder.path:
                result = dataclasses.replace(
                    result,
                    report=result.report.model_copy(
                        update={"project_folder": folder.path, "notes": (folder.note, *result.report.notes)}
                    ),
                )
            if engine_setup.llm_problem:
                result = _without_llm(result, engine_setup.llm_problem)
            result = dataclasses.replace(result, report=with_next_step(result.report, request))
            trace("outcome", result.report.stop_reason.value, **outcome_fields(result.report))
            trace.close()
            if memory is not None:
                recorded = learn_from_run(memory, trace.path, result.report)
                for message in memory.warnings:
                    warned(message)
        finally:
            trace.close()
            if memory is not None:
                memory.close()
    finally:
        if setup is not None:
            setup.close()  # the project's environment lives as long as the heal's test runs
    paths, view_warnings = write_report_files(out_dir, result.report, trace.path)
    for message in view_warnings:
        warned(message)
    return HealOutcome(result, paths, tuple(warnings), memory_recorded=recorded)


def for_node(request: HealRequest, node: NodeProject) -> HealRequest:
    """The request for a Node project's test runs: its own test command (from package.json when none was given:
    a pytest command is selfix's default, not the project's) and node itself, which the action's Docker image
    does not carry."""
    source = request.env_source if request.env_source is not None else os.environ
    if shutil.which("node", path=source.get("PATH")) is None:
        raise InputError(
            "this is a JavaScript/TypeScript project and node is not installed where selfix runs: use the composite "
            "variant of the action (uses: selfix-action/selfix-action/composite@v1), which runs on the runner's "
            "node after actions/setup-node, or install node in the job"
        )
    test_cmd = request.test_cmd
    if not test_cmd or (is_python(Path(test_cmd[0])) and "pytest" in test_cmd) or _runs_test_script(test_cmd):
        test_cmd = test_command(node)
    return dataclasses.replace(request, test_cmd=test_cmd)


def _for_node(request: HealRequest, node: NodeProject) -> HealRequest:
    """``for_node``, with an LLM engine: the offline engine's templates are Python's."""
    request = for_node(request, node)
    engine = request.engine
    if engine.kind == "offline":
        raise InputError(
            "the offline engine heals Python only (its repair templates read Python's syntax tree): a "
            "JavaScript/TypeScript project needs the LLM engine (--engine anthropic, openai or auto with a key)"
        )
    if engine.kind == "auto":
        provider = auto_provider(engine) or ("openai" if engine.replay is not None else None)
        if provider is None:
            raise InputError(
                "--engine auto found no model key, and the offline engine heals Python only: a JavaScript/TypeScript "
                "project needs an LLM engine (ANTHROPIC_API_KEY or OPENAI_API_KEY, or --api-key)"
            )
        engine = dataclasses.replace(engine, kind=provider)
    return dataclasses.replace(request, engine=engine)


def _runs_test_script(test_cmd: Sequence[str]) -> bool:
    """``npm test``, ``yarn test``, ``pnpm run test``: the project's test script, which selfix reads and runs
    itself (a package manager would run pre- and post-scripts, and could fetch packages)."""
    return Path(test_cmd[0]).name in ("npm", "yarn", "pnpm") and list(test_cmd[1:]) in (
        ["test"],
        ["t"],
        ["run", "test"],
    )


def _in_folder(request: HealRequest, repo: Path, folder: str) -> HealRequest:
    """The request as the project in ``folder`` sees it: its folder the repository the sandbox copies, the
    protected patterns read from there."""
    if not folder:
        return request
    loop = request.loop.model_copy(update={"protected_paths": project_patterns(request.loop.protected_paths, folder)})
    return dataclasses.replace(request, repo=repo / folder, working_directory=".", loop=loop)


def _without_llm(result: HealResult, problem: str) -> HealResult:
    """``--engine auto`` whose LLM engine could not be set up: the offline engine's outcome, with the problem in
    the report; a heal it did not finish (exit 1) is then bad input (exit 2): the setup is what to fix."""
    report = result.report
    exit_code = ExitCode.BAD_INPUT if report.exit_code == ExitCode.NOT_HEALED else report.exit_code
    report = report.model_copy(
        update={"llm_problem": problem, "exit_code": int(exit_code), "notes": (problem, *report.notes)}
    )
    return dataclasses.replace(result, report=report)


def _setup(
    request: HealRequest, repo: Path, show: Callable[[str], None] | None, isolation: Isolation
) -> tuple[HealRequest, SetupResult]:
    """The setup command, inside ``isolation`` (with the network) on a scratch copy, installing into a project
    environment of its own; a failure is bad input. The request comes back with that environment activated
    for the test runs: a Python test command (the default, selfix's interpreter, or any ``python…``) runs
    with the environment's interpreter, made from that same interpreter."""
    program = Path(request.test_cmd[0])
    python_cmd = is_python(program)
    source = request.env_source if request.env_source is not None else os.environ
    try:
        setup = run_setup_command(
            request.setup_command,
            repo=repo,
            env_source=source,
            wall_seconds=request.setup_seconds,
            isolation=isolation,
            base_python=program if python_cmd else sys.executable,
        )
    except SandboxError as exc:
        raise InputError(f"setup_command failed to run: {exc}") from exc
    result = setup.result
    if show is not None:
        show((result.stdout + result.stderr)[-20000:])
    if not setup.ok:
        setup.close()
        if result.timed_out:
            raise InputError(f"setup_command did not finish within {request.setup_seconds:g} s")
        raise InputError(f"setup_command exited with {result.returncode}")
    test_cmd = (str(setup.python), *request.test_cmd[1:]) if python_cmd else request.test_cmd
    changed = dataclasses.replace(request, test_cmd=test_cmd, env_source=project_env_source(source, setup.venv))
    if python_cmd:
        return changed, setup
    note = (
        f"test_command {program.name} is not a Python interpreter: it sees the setup's installs (in {setup.venv}) "
        "only through PATH"
    )
    return changed, dataclasses.replace(setup, warnings=(*setup.warnings, note))
