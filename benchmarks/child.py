"""Run one benchmark function in a fresh Python process and get its figures back.

Why a fresh process: peak resident memory is only meaningful for a process that did nothing else, the
one-core figures need a process pinned to one CPU before polars starts its thread pool, and settings come
from the environment, which the parent should not change under itself.

The child is ``python -m benchmarks.child MODULE:FUNCTION ARGUMENTS.json OUT.json``: it calls the function
with the arguments (a JSON object) and writes the JSON object it returns to OUT.json. `run_measured` runs any
command instead (a CLI, another virtual environment's python) and measures it from outside.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = Path(__file__).resolve().with_name("launcher.py")  # starts the process measured: see its docstring


class ChildFailed(RuntimeError):
    """A benchmark's child process exited with an error; the message ends with its stderr."""


def run_in_child(
    function: str,
    arguments: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    cpus: set[int] | None = None,
) -> dict[str, Any]:
    """Call ``module:function(**arguments)`` in a new process (``cpus``: the CPUs it may run on), started by
    benchmarks/launcher.py so that the peak RSS it measures of itself is its own."""
    with tempfile.TemporaryDirectory(prefix="pmw-bench-") as scratch:
        arguments_path, out_path = Path(scratch) / "arguments.json", Path(scratch) / "out.json"
        usage_path = Path(scratch) / "usage.json"
        arguments_path.write_text(json.dumps(arguments))
        completed = subprocess.run(
            [sys.executable, str(LAUNCHER), str(usage_path),
             sys.executable, "-m", "benchmarks.child", function, str(arguments_path), str(out_path)],
            cwd=REPO_ROOT,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
            check=False,
        )
        code = json.loads(usage_path.read_text())["exit"] if usage_path.exists() else completed.returncode
        if code != 0:
            raise ChildFailed(f"{function} failed (exit {code}):\n{completed.stderr[-3000:]}")
        return json.loads(out_path.read_text())


@dataclass(frozen=True)
class Measured:
    """A finished command: its wall time from start to exit, its own CPU time (user and system) and peak resident
    set, and its stdout."""

    seconds: float
    cpu_seconds: float
    peak_rss_mb: int
    stdout: str


def run_measured(command: list[str], *, env: dict[str, str], deadline_s: float, scratch: Path) -> Measured:
    """Run ``command`` (its output into files under ``scratch``) and measure it: the wall time, and the CPU time
    and peak RSS of that process alone (os.wait4's rusage, not its children's, taken by benchmarks/launcher.py so
    that the runner's own size is not counted); ChildFailed if it fails or outlives ``deadline_s`` (then it is
    killed)."""
    scratch.mkdir(parents=True, exist_ok=True)
    out_path, err_path, usage_path = scratch / "stdout.txt", scratch / "stderr.txt", scratch / "usage.json"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        launcher = subprocess.Popen([sys.executable, str(LAUNCHER), str(usage_path), *command], cwd=REPO_ROOT,
                                    env={**os.environ, **env}, stdout=out, stderr=err, start_new_session=True)
        try:
            launcher.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(timeout=10)
            raise ChildFailed(f"{' '.join(command[1:4])} still running after {deadline_s:.0f} s: killed") from None
    usage = json.loads(usage_path.read_text())
    if usage["exit"] != 0:
        raise ChildFailed(f"{' '.join(command[1:4])} failed (exit {usage['exit']}):\n"
                          f"{err_path.read_text(errors='replace')[-3000:]}")
    return Measured(round(usage["seconds"], 1), round(usage["cpu_seconds"], 1), round(usage["peak_rss_kb"] / 1024),
                    out_path.read_text(errors="replace"))


def _main(function: str, arguments_path: str, out_path: str) -> None:
    module_name, _, name = function.partition(":")
    result = getattr(importlib.import_module(module_name), name)(**json.loads(Path(arguments_path).read_text()))
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    _main(*sys.argv[1:4])
