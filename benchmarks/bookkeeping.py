"""Bookkeeping: Dagster's share of a backfill's CPU time, next to the pipeline's own.

The window of the peers benchmark (7 days of Polymarket, sandbox seed 7) is backfilled by `pmw backfill`'s own
code (`run_backfill`: one Dagster run per partition, recorded in a fresh Dagster home holding the project's
dagster.yaml, the SQLite storage `pmw` opens) in a process of its own, against the sandbox served over HTTP on
loopback from this process, so that the child's CPU time is the backfill's alone. In the child the backfill's
stack is sampled each time the process has spent SAMPLE_EVERY_S more seconds of CPU (a SIGPROF timer, every
thread's time counted, polars' pool included), each sample weighted by that CPU time. (A sampling thread would
take its samples where the backfill releases the interpreter's lock, after SQLite or polars calls, not where the
time went.) A sample is Dagster's when, walking out from the innermost frame, the first frame of Dagster's
packages (dagster, dagster_shared, ...) comes before any of pipeline/: the libraries it calls (SQLAlchemy,
sqlite3, serialisation) count as its, and those the pipeline calls (polars, pyarrow, DuckDB, httpx) as the
pipeline's. Samples under neither (the interpreter's start) are "other".
"""
from __future__ import annotations

import shutil
import signal
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.report import Report, Target

TARGET_SHARE = 0.15  # Dagster's share of a backfill's CPU time, at most
SAMPLE_EVERY_S = 0.005
SEED = 7
END = date(2026, 11, 21)
PLATFORM = "polymarket"
PIPELINE_DIR = str(Path(__file__).resolve().parent.parent / "pipeline") + "/"
DAGSTER_MARKERS = ("/dagster/", "/dagster_shared/", "/dagster_pipes/", "/dagster_graphql/")


def run(quick: bool, workdir: Path) -> Report:
    from pmw_sandbox.app import SandboxApp, SandboxConfig
    from pmw_sandbox.catalogue import WorldConfig
    from pmw_sandbox.server import SandboxServer

    days = 1 if quick else 7
    scratch = workdir / "bookkeeping"
    shutil.rmtree(scratch, ignore_errors=True)
    app = SandboxApp(SandboxConfig(world=WorldConfig(seed=SEED, end=END, days=days)))
    with SandboxServer(app, port=0) as server:
        figure = run_in_child("benchmarks.bookkeeping:sampled_backfill", {"days": days}, env={
            "PMW_SOURCE": "api", "PMW_API_URL": server.url, "PMW_API_KEY": "sandbox-key", "PMW_PLATFORMS": PLATFORM,
            "PMW_DATA_DIR": str(scratch / "data"), "PMW_RATE_LIMIT_DB": str(scratch / "rate-limit.sqlite"),
            "PMW_RATE_LIMIT_PER_MIN": "1000000", "PMW_START_DATE": (END - timedelta(days=days - 1)).isoformat(),
            "DAGSTER_HOME": "",  # the data dir's own home, made from the project's dagster.yaml
        })
    shutil.rmtree(scratch, ignore_errors=True)
    cpu, share = figure["cpu_s"], figure["share"]
    rows = [[owner, round(cpu[owner], 2), f"{share[owner]:.1%}"] for owner in ("dagster", "pipeline", "other")]
    return Report(
        name="bookkeeping",
        title=f"Bookkeeping: {days} day(s) of {PLATFORM} through pmw backfill ({figure['partitions']} Dagster runs, "
              f"sandbox seed {SEED} over HTTP), CPU time by owner, sampled every {SAMPLE_EVERY_S * 1000:.0f} ms of CPU",
        columns=["owner", "CPU s", "share"],
        rows=rows,
        figures=figure,
        targets=[Target(f"Dagster's share of the backfill's CPU at most {TARGET_SHARE:.0%}",
                        share["dagster"] <= TARGET_SHARE,
                        f"{share['dagster']:.1%} of {sum(cpu.values()):.1f} s; wall {figure['seconds']} s")],
        notes=[f"Dagster's costliest modules: {', '.join(figure['dagster_top'])}"],
    )


def owner(frame: FrameType | None) -> str:
    """Whose the sample is: "dagster" or "pipeline", by the innermost frame of either; else "other"."""
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(PIPELINE_DIR):
            return "pipeline"
        if any(marker in path for marker in DAGSTER_MARKERS):
            return "dagster"
        frame = frame.f_back
    return "other"


def _dagster_module(frame: FrameType | None) -> str:
    """The Dagster module of the innermost Dagster frame (its package path, three deep): where the time goes."""
    while frame is not None:
        path = frame.f_code.co_filename
        for marker in DAGSTER_MARKERS:
            if marker in path:
                inner = path.split(marker, 1)[1].removesuffix(".py").split("/")
                return ".".join([marker.strip("/"), *inner[:3]])
        frame = frame.f_back
    return "?"


class _Sampler:
    """The CPU time between SIGPROF samples, by owner (and Dagster's by module), while `running`."""

    def __init__(self) -> None:
        self.cpu, self.dagster = Counter[str](), Counter[str]()
        self._last = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        self._last = time.process_time()
        previous = signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, SAMPLE_EVERY_S, SAMPLE_EVERY_S)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0, 0)
            signal.signal(signal.SIGPROF, previous)
            self._sample(signal.SIGPROF, None)  # the time since the last sample: the backfill's end

    def _sample(self, _signum: int, frame: FrameType | None) -> None:
        now = time.process_time()
        whose = owner(frame)
        self.cpu[whose] += now - self._last
        if whose == "dagster":
            self.dagster[_dagster_module(frame)] += now - self._last
        self._last = now


def sampled_backfill(days: int) -> dict[str, Any]:
    """In the child: the backfill of the window, its stack sampled; CPU seconds and shares by owner."""
    from pipeline.cli.backfill.partitions import run_backfill

    sampler = _Sampler()
    started = time.perf_counter()
    with sampler.running():
        reports = run_backfill([PLATFORM], END - timedelta(days=days - 1), END, say=lambda _: None)
    failed = [r.line() for r in reports if not r.success]
    if failed:
        raise RuntimeError(f"backfill failed: {failed}")
    total = sum(sampler.cpu.values())
    return {
        "partitions": len(reports), "seconds": round(time.perf_counter() - started, 1),
        "cpu_s": {name: round(sampler.cpu[name], 2) for name in ("dagster", "pipeline", "other")},
        "share": {name: round(sampler.cpu[name] / total, 4) for name in ("dagster", "pipeline", "other")},
        "dagster_top": [f"{name} {seconds:.2f} s" for name, seconds in sampler.dagster.most_common(6)],
        "trades": sum(r.rows.get("trades", 0) for r in reports),
    }
