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
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


class ChildFailed(RuntimeError):
    """A benchmark's child process exited with an error; the message ends with its stderr."""


def run_in_child(
    function: str,
    arguments: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    cpus: set[int] | None = None,
) -> dict[str, Any]:
    """Call ``module:function(**arguments)`` in a new process (``cpus``: the CPUs it may run on)."""
    with tempfile.TemporaryDirectory(prefix="pmw-bench-") as scratch:
        arguments_path, out_path = Path(scratch) / "arguments.json", Path(scratch) / "out.json"
        arguments_path.write_text(json.dumps(arguments))
        completed = subprocess.run(
            [sys.executable, "-m", "benchmarks.child", function, str(arguments_path), str(out_path)],
            cwd=REPO_ROOT,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
            check=False,
        )
        if completed.returncode != 0:
            raise ChildFailed(f"{function} failed (exit {completed.returncode}):\n{completed.stderr[-3000:]}")
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
    and peak RSS of that process alone (os.wait4's rusage, not its children's); ChildFailed if it fails or
    outlives ``deadline_s`` (then it is killed)."""
    scratch.mkdir(parents=True, exist_ok=True)
    out_path, err_path = scratch / "stdout.txt", scratch / "stderr.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=REPO_ROOT, env={**os.environ, **env}, stdout=out, stderr=err)
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > deadline_s:
                process.kill()
                process.wait(timeout=10)
                raise ChildFailed(f"{' '.join(command[1:4])} still running after {deadline_s:.0f} s: killed")
            time.sleep(0.01)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: Popen must not wait again
    if process.returncode != 0:
        raise ChildFailed(f"{' '.join(command[1:4])} failed (exit {process.returncode}):\n"
                          f"{err_path.read_text(errors='replace')[-3000:]}")
    return Measured(round(seconds, 1), round(usage.ru_utime + usage.ru_stime, 1), round(usage.ru_maxrss / 1024),
                    out_path.read_text(errors="replace"))


def _main(function: str, arguments_path: str, out_path: str) -> None:
    module_name, _, name = function.partition(":")
    result = getattr(importlib.import_module(module_name), name)(**json.loads(Path(arguments_path).read_text()))
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    _main(*sys.argv[1:4])
