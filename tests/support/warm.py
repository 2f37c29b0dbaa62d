"""`pmw` commands in processes of their own that start warm.

A fresh interpreter spends about four seconds of CPU importing Dagster and the pipeline and warming Dagster's
execution machinery before a backfill sends its first request; the crash, concurrency and security tests
start dozens of such processes. Here each is forked from a multiprocessing fork server that did that work
once (tests.support.warm_preload): the child is still a process of its own, with its own environment, pid,
files and budget, that runs `pipeline.cli.main.main` and can be SIGKILLed at any point, but it starts in
milliseconds. The fork server is single-threaded, so forking it is safe, unlike forking the test process
(whose sandbox server and pools run threads). `pmw` started as a fresh interpreter is still tested where
the start itself matters (tests/cli/test_demo.py, tests/architecture/test_imports.py).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.support.paths import REPO_ROOT

_FORK_SERVER = multiprocessing.get_context("forkserver")
_FORK_SERVER.set_forkserver_preload(["tests.support.warm_preload"])


def _run_pmw(env: dict[str, str], args: list[str], out_path: str, err_path: str) -> None:
    """The child: the given environment and working directory, stdout and stderr to files, then `pmw args`."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(REPO_ROOT)
    for stream, path in ((sys.stdout, out_path), (sys.stderr, err_path)):
        stream.flush()
        with open(path, "wb") as file:
            os.dup2(file.fileno(), stream.fileno())
    from pipeline.cli.main import main

    code = main(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no atexit work: the process ends as a killed one would, apart from its exit code


def warm_process(target: Callable[..., None], *args: object) -> multiprocessing.process.BaseProcess:
    """A process (not started) forked from the warm fork server that calls `target(*args)`: the target must be
    a module-level function, and must start no thread that outlives it."""
    return _FORK_SERVER.Process(target=target, args=args)


class WarmProcess:
    """A `pmw` process forked warm, with the parts of `subprocess.Popen` the tests use."""

    def __init__(self, env: Mapping[str, str], args: Sequence[str]) -> None:
        self._outputs = tempfile.TemporaryDirectory(prefix="pmw-warm-")
        self._out = Path(self._outputs.name) / "stdout"
        self._err = Path(self._outputs.name) / "stderr"
        self._process = _FORK_SERVER.Process(target=_run_pmw, args=(dict(env), list(args), str(self._out),
                                                                    str(self._err)))
        self._process.start()
        self.pid: int = self._process.pid  # type: ignore[assignment]
        self._ended: tuple[int, str, str] | None = None

    @property
    def returncode(self) -> int | None:
        """The exit code, or minus the signal that ended the process (as Popen says it); None while it runs."""
        return self._ended[0] if self._ended is not None else self._process.exitcode

    def poll(self) -> int | None:
        return self.returncode

    def kill(self) -> None:
        if self._ended is None:
            self._process.kill()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the end (TimeoutError after `timeout` seconds); its stdout and stderr."""
        if self._ended is None:
            self._process.join(timeout)
            code = self._process.exitcode
            if code is None:
                raise TimeoutError(f"pmw (pid {self.pid}) still running after {timeout} s")
            out, err = (path.read_text() if path.exists() else "" for path in (self._out, self._err))
            self._ended = (code, out, err)
            self._process.close()
            self._outputs.cleanup()
        return self._ended[1], self._ended[2]
