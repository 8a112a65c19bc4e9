"""Measure what an isolation level costs per test run: N cold runs of a tiny pytest suite through the real
sandbox (``PytestSandbox.run_tests``: interpreter start, pytest, selfix's collector plugin) at each level,
side by side in one process, interleaved so that machine noise hits every level alike.

    .venv/bin/python -m selfix_bench.isolation_cost [--runs N] [--levels none,bwrap,landlock]

Prints the median and mean wall time per run at each level, the overhead over ``none``, and the ratio
landlock / bwrap. At landlock as root the command runs as the sandbox uid with no mount namespace, so the
interpreter must be reachable by that uid: when selfix's own is not (pyenv under a 0700 /root), a venv of the
system python with this venv's site-packages stands in for every level (``--python`` names another).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from selfix_action.errors import SandboxError
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, _check_reachable, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox

TINY_SUITE = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n"
    + "".join(f"\n\ndef test_{i}():\n    assert add({i}, {i}) == {2 * i}\n" for i in range(10)),
    "pytest.ini": "[pytest]\ntestpaths = tests\n",
}


def reachable_python(folder: Path, isolation: Isolation | None) -> str:
    if isolation is None or isolation.uid is None:
        return sys.executable
    try:
        _check_reachable(Path(sys.executable), isolation.uid, isolation.gid)
        return sys.executable
    except SandboxError:
        pass
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    base = shutil.which(f"python{version}", path="/usr/bin:/usr/local/bin")
    if base is None:
        raise SystemExit(f"selfix's interpreter is unreachable by uid {isolation.uid} and no system python{version}")
    venv = folder / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = sysconfig.get_paths()["purelib"]
    (venv / "lib" / f"python{version}" / "site-packages" / "bench.pth").write_text(
        f"import site; site.addsitedir({site!r})\n", encoding="utf-8"
    )
    return str(venv / "bin" / "python")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="cold runs per level (20)")
    parser.add_argument("--levels", default="none,bwrap,landlock", help="comma-separated levels (none,bwrap,landlock)")
    parser.add_argument("--python", help="interpreter for the suite (default: see above)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="selfix-isolation-cost-"))
    work.chmod(0o755)
    try:
        levels: dict[str, Isolation | None] = {}
        for name in args.levels.split(","):
            levels[name] = None if name == "none" else detect_isolation(IsolationConfig(mode=name))
        landlock = levels.get("landlock")
        python = args.python or reachable_python(work, landlock)
        repo = work / "repo"
        for path, text in TINY_SUITE.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text, encoding="utf-8")
        boxes = {
            name: PytestSandbox(
                repo,
                [python, "-m", "pytest"],
                limits=Limits(wall_seconds=60),
                scratch_parent=work,
                isolation=iso,
                hot=False,
            )
            for name, iso in levels.items()
        }
        times: dict[str, list[float]] = {name: [] for name in levels}
        for box in boxes.values():  # one warm-up each (page cache, .pyc of the suite's imports)
            box.run_tests()
        for _ in range(args.runs):
            for name, box in boxes.items():
                started = time.perf_counter()
                run = box.run_tests()
                times[name].append(time.perf_counter() - started)
                if len(run.results) != 10 or not all(r.status.value == "passed" for r in run.results.values()):
                    raise SystemExit(f"{name}: the tiny suite did not pass: {run.output_tail}")
        for box in boxes.values():
            box.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base = statistics.median(times["none"]) if "none" in times else None
    print(f"{args.runs} cold runs per level of a 10-test pytest suite, interpreter {python}")
    for name, values in times.items():
        median = statistics.median(values)
        extra = f"  +{(median - base) * 1000:6.1f} ms over none" if base is not None and name != "none" else ""
        level = levels[name]
        mechanism = level.mechanism if level is not None else "plain subprocess"
        print(
            f"{name:>9}: median {median * 1000:7.1f} ms, mean {statistics.mean(values) * 1000:7.1f} ms"
            f"{extra}  ({mechanism})"
        )
    if "bwrap" in times and "landlock" in times:
        ratio = statistics.median(times["landlock"]) / statistics.median(times["bwrap"])
        print(f"landlock / bwrap per run (medians): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
