"""The attack suite's families for a JavaScript project, each through a real NodeSandbox (node's own test runner:
nothing to install) at this machine's best level and at the namespace-free landlock level: secrets in the
environment and in other processes, the checkout's token and ~/.git-credentials, the host's loopback, writes
outside the scratch copy, a fork bomb, and a hostile ``postinstall`` (selfix never installs: it never runs).

Each attack test is followed by a canary test in the same file, which must pass: the run went on after the
attack. A secret is written reversed in the attack's source, so its own text (in a stack trace) holds none."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from selfix_action.repair.values import TestRun, TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.node_sandbox import NodeSandbox
from selfix_action.sandbox.process import Limits
from selfix_action.toolchains.node import NodeProject, detect_project
from tests.helpers.isolation import (
    ALL_FAKE_SECRETS,
    FAKE_API_KEY,
    FAKE_CHECKOUT_TOKEN,
    FAKE_GITHUB_TOKEN,
    home_with_git_credentials,
    need_level,
    need_process_limit,
    traversable,
)
from tests.helpers.node_projects import write

NODE = NodeProject("npm", "node", "node --test test/")
ATTACK = "test/attack.test.js::attack"
CANARY = "test/attack.test.js::zz canary"


@pytest.fixture(autouse=True)
def _node(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    traversable(tmp_path)


def _run(
    tmp_path: Path,
    isolation: Isolation,
    attack: str,
    *,
    env_source: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    limits: Limits | None = None,
) -> tuple[TestRun, NodeSandbox, Path]:
    """A project whose test ``attack`` runs ``attack`` (an async function body), then a canary; its whole suite
    run once in a NodeSandbox at ``isolation``."""
    source = (
        "const { test } = require('node:test');\nconst assert = require('node:assert');\n"
        "const fs = require('node:fs');\nconst net = require('node:net');\n"
        "const cp = require('node:child_process');\nconst os = require('node:os');\n"
        f"test('attack', async () => {{\n{attack}\n}});\n"
        "test('zz canary', () => { assert.strictEqual(1 + 1, 2); });\n"
    )
    repo = write(
        tmp_path / "repo",
        {"package.json": json.dumps({"scripts": {"test": "node --test test/"}}), "test/attack.test.js": source,
         **(files or {})},
    )  # fmt: skip
    env = dict(env_source or {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")})
    sandbox = NodeSandbox(
        repo, ["node", "--test", "test/"], NODE, isolation=isolation, env_source=env, limits=limits or Limits(60)
    )
    try:
        return sandbox.run_tests(None), sandbox, repo
    finally:
        sandbox.close()


def _hides_other_processes(isolation: Isolation) -> None:
    """The parent's /proc/<pid>/environ is out of reach only where other processes are hidden (as in the Python
    suite's test_parent_process_environ_cannot_be_read)."""
    need_level(isolation, IsolationLevel.UNSHARE, "hiding other processes")
    if isolation.kind == "unshare-root-net":
        need_level(isolation, IsolationLevel.BWRAP, "hiding other processes (no pid namespace here)")


def _blocked(run: TestRun, *words: str) -> str:
    """The attack failed (its message holds one of ``words`` when given) and the canary after it passed; no fake
    secret shows anywhere in the run's output."""
    attack = run.results.get(ATTACK)
    assert attack is not None, f"the attack test did not run:\n{run.output_tail}\n{run.error}"
    assert attack.status is TestStatus.FAILED, f"ATTACK SUCCEEDED: {attack.message}\n{run.output_tail}"
    assert not words or any(w in attack.message for w in words), attack.message
    canary = run.results.get(CANARY)
    assert canary is not None and canary.status is TestStatus.PASSED, "the run did not go on after the attack"
    text = run.output_tail + "".join(r.message for r in run.results.values())
    assert not any(secret in text for secret in ALL_FAKE_SECRETS)
    return attack.message


def test_secrets_in_the_environment_and_in_other_processes_are_not_reachable(
    tmp_path: Path, isolation: Isolation
) -> None:
    _hides_other_processes(isolation)
    secrets = {"GITHUB_TOKEN": FAKE_GITHUB_TOKEN, "ANTHROPIC_API_KEY": FAKE_API_KEY, "NPM_TOKEN": FAKE_API_KEY}
    attack = f"""
  const wanted = [{json.dumps(FAKE_GITHUB_TOKEN[::-1])}, {json.dumps(FAKE_API_KEY[::-1])}]
    .map((s) => [...s].reverse().join(''));
  let seen = JSON.stringify(process.env);
  for (const pid of ['self', '1', String(process.ppid)]) {{
    try {{ seen += fs.readFileSync(`/proc/${{pid}}/environ`, 'latin1'); }} catch (e) {{}}
  }}
  assert.ok(wanted.some((s) => seen.includes(s)), 'no secret found');
"""
    run, _, _ = _run(tmp_path, isolation, attack, env_source={**secrets, "PATH": os.environ["PATH"]})
    _blocked(run, "no secret found")


GIT_CONFIG = f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {FAKE_CHECKOUT_TOKEN}\n'


def test_the_checkouts_token_and_the_callers_git_credentials_are_unreachable(
    tmp_path: Path, isolation: Isolation
) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "hiding the original repository and $HOME")
    home = home_with_git_credentials(tmp_path)
    repo = tmp_path / "repo"
    attack = f"""
  const places = [{json.dumps(str(repo / ".git" / "config"))}, {json.dumps(str(home / ".git-credentials"))},
                  `${{os.homedir()}}/.git-credentials`];
  const read = [];
  for (const place of places) {{ try {{ read.push(fs.readFileSync(place, 'utf8')); }} catch (e) {{}} }}
  assert.ok(read.some((t) => t.includes('extraheader') || t.includes('x-access-token')), 'no credentials read');
"""
    files = {".git/config": GIT_CONFIG}
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    run, _, repo = _run(tmp_path, isolation, attack, env_source=env, files=files)
    _blocked(run, "no credentials read")
    assert FAKE_CHECKOUT_TOKEN in (repo / ".git" / "config").read_text()  # it was there to steal


def test_the_hosts_loopback_and_the_outside_are_unreachable(
    tmp_path: Path, isolation: Isolation, listener: socket.socket
) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    port = listener.getsockname()[1]
    attack = f"""
  const reach = (host, port) => new Promise((resolve) => {{
    const socket = net.connect({{ host, port }});
    socket.setTimeout(5000, () => {{ socket.destroy(); resolve('timeout'); }});
    socket.on('connect', () => {{ socket.destroy(); resolve('connected'); }});
    socket.on('error', (e) => resolve(e.code));
  }});
  const local = await reach('127.0.0.1', {port});
  const outside = await reach('1.1.1.1', 443);
  assert.ok(local === 'connected' || outside === 'connected', `blocked: ${{local}} ${{outside}}`);
"""
    run, _, _ = _run(tmp_path, isolation, attack)
    _blocked(run, "blocked:")
    try:
        conn, _ = listener.accept()
        conn.close()
        pytest.fail("the attack reached the host's loopback listener")
    except BlockingIOError:
        pass


def test_writes_outside_the_scratch_copy_fail(tmp_path: Path, isolation: Isolation) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "a read-only filesystem")
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # anyone may write here: only the sandbox can stop it
    repo = tmp_path / "repo"
    attack = f"""
  const written = [];
  for (const target of [{json.dumps(str(outside / "pwned"))}, {json.dumps(str(repo / "pwned"))}]) {{
    try {{ fs.writeFileSync(target, 'pwned'); written.push(target); }} catch (e) {{}}
  }}
  assert.ok(written.length > 0, 'nothing written outside');
"""
    run, _, _ = _run(tmp_path, isolation, attack)
    _blocked(run, "nothing written outside")
    assert not (outside / "pwned").exists() and not (repo / "pwned").exists()


BOMB = """
  let made = 0;
  let refused = null;
  for (let i = 0; i < 400; i++) {
    try {
      const child = cp.spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
      await new Promise((resolve, reject) => { child.on('spawn', resolve); child.on('error', reject); });
      child.unref();  // the test ends at once; its sleepers are the sandbox's to kill
      made++;
    } catch (e) { refused = e.code || String(e); break; }
  }
  assert.strictEqual(refused, null, `spawn refused after ${made} children: ${refused}`);
"""


@pytest.mark.slow
def test_a_fork_bomb_is_bounded_and_leaves_nothing_behind(tmp_path: Path, isolation: Isolation) -> None:
    need_process_limit(isolation)
    # A sandbox uid of its own (one per level, the two halves may run at once): RLIMIT_NPROC counts every process
    # and thread of the uid, and node's own threads in another test's run would count against this cap.
    if isolation.uid is not None:
        uid = 64980 - (isolation.level is IsolationLevel.LANDLOCK)
        isolation = detect_isolation(IsolationConfig(mode=isolation.level.value, sandbox_uid=uid, sandbox_gid=uid))
        need_process_limit(isolation)
    run, _, _ = _run(tmp_path, isolation, BOMB, limits=Limits(wall_seconds=20, max_processes=64))
    message = _blocked(run, "spawn refused")
    assert "EAGAIN" in message, message
    deadline = time.monotonic() + 15  # the kernel tears a killed process down asynchronously
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _sleepers(), "a sleeper of the bomb survived the run"


def _sleepers() -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"300"]:
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_hostile_postinstall_never_runs(tmp_path: Path, isolation: Isolation) -> None:
    """Dependencies are the workflow's: selfix runs no install, so no lifecycle script of the project runs."""
    marker = tmp_path / "postinstall-ran"
    scripts = {"test": "node --test test/", "postinstall": f"touch {marker}", "pretest": f"touch {marker}"}
    attack = "  assert.fail('the attack is the package.json scripts, not this test');"
    run, _, _ = _run(tmp_path, isolation, attack, files={"package.json": json.dumps({"scripts": scripts})})
    _blocked(run, "the attack is the package.json scripts")
    assert not marker.exists()


@pytest.mark.slow
def test_a_mocha_test_sees_no_secret_either(tmp_path: Path, isolation: Isolation) -> None:
    """mocha's process (the runner's own, not node's test runner) gets the same allowlisted environment."""
    from tests.helpers.node_projects import install_into

    _hides_other_processes(isolation)
    secrets = {"GITHUB_TOKEN": FAKE_GITHUB_TOKEN, "ANTHROPIC_API_KEY": FAKE_API_KEY}
    wanted = json.dumps([FAKE_GITHUB_TOKEN[::-1], FAKE_API_KEY[::-1]])
    source = (
        "const assert = require('node:assert');\nconst fs = require('node:fs');\n"
        f"const wanted = {wanted}.map((s) => [...s].reverse().join(''));\n"
        "describe('mocha', () => {\n"
        "  it('attack', () => {\n"
        "    let seen = JSON.stringify(process.env);\n"
        "    for (const pid of ['self', '1', String(process.ppid)]) {\n"
        "      try { seen += fs.readFileSync(`/proc/${pid}/environ`, 'latin1'); } catch (e) {}\n"
        "    }\n"
        "    assert.ok(wanted.some((s) => seen.includes(s)), 'no secret found');\n"
        "  });\n"
        "  it('zz canary', () => { assert.strictEqual(1 + 1, 2); });\n"
        "});\n"
    )
    package = {"scripts": {"test": "mocha test/"}, "devDependencies": {"mocha": "*"}}
    repo = write(tmp_path / "repo", {"package.json": json.dumps(package), "test/attack.test.js": source})
    install_into(repo)
    project = detect_project((repo / "package.json").read_text(), os.listdir(repo))
    assert project.runner == "mocha"
    env = {**secrets, "PATH": os.environ["PATH"], "HOME": str(tmp_path / "home")}
    with NodeSandbox(
        repo, ["node_modules/.bin/mocha", "test/"], project, isolation=isolation, env_source=env, limits=Limits(60)
    ) as sandbox:
        run = sandbox.run_tests(None)
    attack = run.results.get("test/attack.test.js::mocha > attack")
    assert attack is not None, f"the attack test did not run: {sorted(run.results)}\n{run.output_tail}\n{run.error}"
    assert attack.status is TestStatus.FAILED, f"ATTACK SUCCEEDED: {attack.message}\n{run.output_tail}"
    assert "no secret found" in attack.message, attack.message
    canary = run.results.get("test/attack.test.js::mocha > zz canary")
    assert canary is not None and canary.status is TestStatus.PASSED, "the run did not go on after the attack"
    text = run.output_tail + "".join(r.message for r in run.results.values())
    assert not any(secret in text for secret in ALL_FAKE_SECRETS)
