"""Peers: the same window of Polymarket through `pmw backfill` and through dlt's `rest_api` source, side by side.

One sandbox world is served over HTTP on loopback (pmw_sandbox's server, the unified API, no rate limit) and
counts the requests of each tool by the API key it sends, as a counting proxy would. Each tool runs in a
process of its own, one after the other, measured from outside (wall time from start to exit, that process's
peak resident set from os.wait4): `pmw backfill` (the CLI, with a Dagster home of its own holding the project's
dagster.yaml, as README.md sets one up, and its request budget raised out of the way), then the dlt pipeline of
benchmarks/peer_dlt_pipeline.py in dlt's own virtual environment (benchmarks/.data/dlt-venv, made on first use
with ``pip install "dlt[duckdb]==1.*"``: dlt is installed for this benchmark only, never into ours).

"At 100 requests/min" is computed, not waited: the longer of the unthrottled wall time and requests / 100
minutes, what a run would take at the unified API's budget if its work overlapped its waits.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.child import ChildFailed, Measured, run_measured
from benchmarks.report import BenchmarkUnavailable, Report, Target
from pipeline.engine.schema import Platform
from pmw_sandbox.app import SandboxApp, SandboxConfig, SandboxResponse
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.server import SandboxServer

SEED = 7
END = date(2026, 11, 21)  # the sandbox world's last day, the window's last day
PLATFORM = "polymarket"
BUDGET_PER_MIN = 100  # the unified API's budget: "time at 100/min"
TARGET_WALL = 0.7  # pmw's unthrottled wall at most this share of dlt's
PMW_KEY, DLT_KEY = "sandbox-key", "sandbox-key-2"  # the sandbox's two default keys: one per tool
# DuckDB 1.x, which dlt 1.x was made against: with DuckDB 2.0.1 (what `dlt[duckdb]` alone installs today) dlt
# 1.31 fails to load JSONL files and loads its default INSERT files at 3.5x the memory (2,782 MB against 780 for
# one day), a fault of the pairing that the comparison would credit to pmw.
DLT_REQUIREMENTS = ("dlt[duckdb]==1.*", "duckdb<2")
INSTALL_DEADLINE_S = 900
RUN_DEADLINE_S = 1800
REPO_ROOT = Path(__file__).resolve().parent.parent


def run(quick: bool, workdir: Path) -> Report:
    days = 1 if quick else 7  # quick: a day of a one-day world proves it runs
    world = WorldConfig(seed=SEED, end=END, days=days)
    first = END - timedelta(days=days - 1)
    python = dlt_python(workdir / "dlt-venv")
    scratch = workdir / "peers"
    shutil.rmtree(scratch, ignore_errors=True)
    app = CountingApp(SandboxConfig(world=world))
    for market in app.world.markets(Platform(PLATFORM)):  # simulated now, so that neither tool waits for it
        app.world.activity(market)
    with SandboxServer(app, port=0) as server:
        pmw = _run_pmw(server.url, first, scratch / "pmw")
        dlt = _run_dlt(python, server.url, first, scratch / "dlt")
    shutil.rmtree(scratch, ignore_errors=True)
    tools = {"pmw backfill": {**pmw, "requests": dict(app.counts[PMW_KEY])},
             "dlt rest_api": {**dlt, "requests": dict(app.counts[DLT_KEY])}}
    for figure in tools.values():
        figure["requests_total"] = sum(figure["requests"].values())
        figure["at_budget_s"] = round(max(figure["seconds"], 60 * figure["requests_total"] / BUDGET_PER_MIN), 1)
    return _report(tools, first, days, _dlt_version(python))


def dlt_python(venv: Path) -> Path:
    """The python of dlt's own virtual environment, made on first use; BenchmarkUnavailable when it cannot be."""
    python = venv / "bin" / "python"
    if python.exists() and _imports_dlt(python):
        return python
    shutil.rmtree(venv, ignore_errors=True)
    print(f"peers: installing {' '.join(DLT_REQUIREMENTS)} into {venv} (first use) ...", flush=True)
    for step in ([sys.executable, "-m", "venv", str(venv)],
                 [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *DLT_REQUIREMENTS]):
        try:
            completed = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_DEADLINE_S, check=False)
        except subprocess.TimeoutExpired:
            raise BenchmarkUnavailable(f"cannot install dlt: {' '.join(step[2:4])} still running after "
                                       f"{INSTALL_DEADLINE_S} s") from None
        if completed.returncode != 0:
            last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
            raise BenchmarkUnavailable(f"cannot install dlt into {venv}: {last}")
    if not _imports_dlt(python):
        raise BenchmarkUnavailable(f"dlt installed into {venv} but does not import")
    return python


def _imports_dlt(python: Path) -> bool:
    check = "import sys, dlt, duckdb; sys.exit(duckdb.__version__.startswith('1.') is False)"
    return subprocess.run([str(python), "-c", check], capture_output=True, timeout=120, check=False).returncode == 0


def _dlt_version(python: Path) -> str:
    """dlt's version and DuckDB's in its environment, e.g. ``1.31.0 (DuckDB 1.5.6)``."""
    show = "import dlt, duckdb; print(f'{dlt.__version__} (DuckDB {duckdb.__version__})')"
    return subprocess.run([str(python), "-c", show], capture_output=True, text=True, timeout=120,
                          check=True).stdout.strip()


class CountingApp(SandboxApp):
    """The sandbox app, counting each request (whatever its answer) by API key and path, as a proxy would."""

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self.counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._counting = threading.Lock()

    def handle(self, method: str, path: str, query: Sequence[tuple[str, str]],
               headers: Mapping[str, str]) -> SandboxResponse:
        key = next((value for name, value in headers.items() if name.lower() == "x-api-key"), "")
        with self._counting:
            self.counts[key][path.rstrip("/") or "/"] += 1
        return super().handle(method, path, query, headers)


def _run_pmw(url: str, first: date, scratch: Path) -> dict[str, Any]:
    """`pmw backfill` of the window in a process of its own; the rows it landed, read from its lake."""
    home = scratch / "dagster_home"
    home.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "pipeline" / "defs" / "dagster.yaml", home / "dagster.yaml")
    env = {
        **{name: "" for name in os.environ if name.startswith("PMW_")},  # none of this shell's settings
        "PMW_SOURCE": "api", "PMW_API_URL": url, "PMW_API_KEY": PMW_KEY, "PMW_PLATFORMS": PLATFORM,
        "PMW_DATA_DIR": str(scratch / "data"), "PMW_RATE_LIMIT_DB": str(scratch / "rate-limit.sqlite"),
        "PMW_RATE_LIMIT_PER_MIN": "1000000",  # unthrottled: the budget never waits
        "DAGSTER_HOME": str(home),
    }
    command = [sys.executable, "-m", "pipeline.cli.main", "backfill", "--platform", PLATFORM,
               "--start", first.isoformat(), "--end", END.isoformat()]
    measured = _measured(command, env, scratch / "process")
    return {**_figures(measured), "rows": {table: _lake_rows(scratch / "data" / "lake" / table)
                                           for table in ("trades", "price_history")}}


def _run_dlt(python: Path, url: str, first: date, scratch: Path) -> dict[str, Any]:
    """The dlt pipeline of the window in dlt's virtual environment; the rows it landed, as it counted them."""
    start = int(datetime.combine(first, datetime.min.time(), UTC).timestamp())
    end = int(datetime.combine(END + timedelta(days=1), datetime.min.time(), UTC).timestamp())
    scratch.mkdir(parents=True)
    arguments = scratch / "arguments.json"
    arguments.write_text(json.dumps({
        "base_url": url, "api_key": DLT_KEY, "platform": PLATFORM, "start": start, "end": end,
        "pipelines_dir": str(scratch / "pipelines"), "database": str(scratch / "peer.duckdb"),
    }))
    env = {"RUNTIME__DLTHUB_TELEMETRY": "false", "DLT_DATA_DIR": str(scratch / "dlt-data"), "PYTHONPATH": ""}
    measured = _measured([str(python), str(Path(__file__).with_name("peer_dlt_pipeline.py")), str(arguments)], env,
                         scratch / "process")
    rows = json.loads(measured.stdout.strip().splitlines()[-1])["rows"]
    return {**_figures(measured), "rows": {"trades": rows["trades"], "price_history": rows["price_history"]}}


def _measured(command: list[str], env: dict[str, str], scratch: Path) -> Measured:
    try:
        return run_measured(command, env=env, deadline_s=RUN_DEADLINE_S, scratch=scratch)
    except ChildFailed as error:
        lines = [line for line in str(error).splitlines() if line.strip()]
        raise BenchmarkUnavailable(f"{lines[0]} {lines[-1].strip()}" if len(lines) > 1 else lines[0]) from None


def _figures(measured: Measured) -> dict[str, Any]:
    return {"seconds": measured.seconds, "cpu_seconds": measured.cpu_seconds, "peak_rss_mb": measured.peak_rss_mb}


def _lake_rows(table_dir: Path) -> int:
    import polars as pl

    files = sorted(table_dir.glob("platform=*/date=*/*.parquet"))
    return int(pl.scan_parquet(files).select(pl.len()).collect().item()) if files else 0


def _report(tools: dict[str, dict[str, Any]], first: date, days: int, dlt_version: str) -> Report:
    pmw, dlt = tools["pmw backfill"], tools["dlt rest_api"]
    ratios = {
        "requests": round(pmw["requests_total"] / dlt["requests_total"], 2),
        "seconds": round(pmw["seconds"] / dlt["seconds"], 2),
        "cpu_seconds": round(pmw["cpu_seconds"] / dlt["cpu_seconds"], 2),
        "at_budget_s": round(pmw["at_budget_s"] / dlt["at_budget_s"], 2),
        "peak_rss_mb": round(pmw["peak_rss_mb"] / dlt["peak_rss_mb"], 2),
        "trades": round(pmw["rows"]["trades"] / max(dlt["rows"]["trades"], 1), 3),
        "price_history": round(pmw["rows"]["price_history"] / max(dlt["rows"]["price_history"], 1), 3),
    }
    rows: list[list[Any]] = [
        [name, t["requests_total"], t["seconds"], t["cpu_seconds"], round(t["at_budget_s"] / 60, 2), t["peak_rss_mb"],
         t["rows"]["trades"], t["rows"]["price_history"]]
        for name, t in tools.items()
    ]
    rows.append(["pmw / dlt", *(ratios[key] for key in ("requests", "seconds", "cpu_seconds", "at_budget_s",
                                                          "peak_rss_mb", "trades", "price_history"))])
    same_rows = pmw["rows"] == dlt["rows"]
    targets = [
        Target(f"pmw's unthrottled wall at most {TARGET_WALL}x dlt's", ratios["seconds"] <= TARGET_WALL,
               f"{ratios['seconds']:.2f}x: {pmw['seconds']} s against {dlt['seconds']} s"),
        Target("pmw makes fewer requests", pmw["requests_total"] < dlt["requests_total"],
               f"{ratios['requests']:.2f}x: {pmw['requests_total']} against {dlt['requests_total']}"),
        Target("pmw's peak memory is less", pmw["peak_rss_mb"] < dlt["peak_rss_mb"],
               f"{ratios['peak_rss_mb']:.2f}x: {pmw['peak_rss_mb']} MB against {dlt['peak_rss_mb']} MB"),
        Target("the same trades and price points landed", same_rows,
               f"trades {pmw['rows']['trades']} and {dlt['rows']['trades']}, price points "
               f"{pmw['rows']['price_history']} and {dlt['rows']['price_history']}"),
    ]
    by_endpoint = ", ".join(f"{path} {n}" for path, n in sorted(pmw["requests"].items()))
    return Report(
        name="peers",
        title=f"Peers: {days} day(s) of {PLATFORM} ({first} .. {END}, sandbox seed {SEED}, {days}-day world) "
              f"through pmw backfill and dlt {dlt_version}, rest_api",
        columns=["tool", "requests", "wall s, unthrottled", "CPU s", f"min at {BUDGET_PER_MIN}/min", "peak RSS MB",
                 "trades", "price points"],
        rows=rows,
        figures={"window": {"first": first.isoformat(), "last": END.isoformat(), "platform": PLATFORM,
                            "seed": SEED}, "dlt": dlt_version, "tools": tools, "ratios": ratios},
        targets=targets,
        notes=[
            f"min at {BUDGET_PER_MIN}/min is computed, not waited: the longer of the unthrottled wall and "
            f"requests / {BUDGET_PER_MIN} minutes",
            f"pmw's requests by endpoint: {by_endpoint}",
            "dlt: markets (cursor paginator), trades per market (taker_only=true, incremental on the time, newest "
            "first) and hourly price history per market, into DuckDB (benchmarks/peer_dlt_pipeline.py)",
            "each tool is one process measured from outside: wall from start to exit (imports included), CPU "
            "time (user and system) and peak RSS of that process alone (the sandbox serving it is not counted)",
        ],
    )
