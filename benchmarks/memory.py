"""Memory: one (platform, day) partition of millions of trades lands with bounded peak resident memory.

The partition is materialised by the real Dagster assets (markets, then trades) in a fresh process, from
an in-process sandbox sized for it (no rate limit), and the figure is that process's peak resident set:
Python, Dagster, the sandbox's simulated markets and the landing together.
"""

from __future__ import annotations

import resource
import shutil
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.report import Report, Target

TARGET_MB = 1024
PLATFORM = "polymarket"  # the larger trade records of the two (hashes, long ids, metadata)
DAY = "2026-11-21"
# Two one-day worlds of about 5 million trades: few markets with many trades each, the hard case (a market's
# trades come newest first, so only a whole market can be put in file order); and as many trades spread over
# a platform's worth of markets. The quick world is the first, a thousand times smaller.
FEW_MARKETS = {
    "series_per_platform": 3,
    "events_per_series": 2,
    "markets_per_event": 3,
    "trades_per_market_day": 2_400_000.0,
}
MANY_MARKETS = {
    "series_per_platform": 8,
    "events_per_series": 6,
    "markets_per_event": 8,
    "trades_per_market_day": 30_000.0,
}
QUICK_WORLDS = {"few markets": {**FEW_MARKETS, "trades_per_market_day": 2_400.0}}
FULL_WORLDS = {"few markets": FEW_MARKETS, "many markets": MANY_MARKETS}


def run(quick: bool, workdir: Path) -> Report:
    data_dir = workdir / "memory"
    measured = {}
    for name, world in (QUICK_WORLDS if quick else FULL_WORLDS).items():
        shutil.rmtree(data_dir, ignore_errors=True)
        measured[name] = run_in_child(
            "benchmarks.memory:land_partition",
            {"world": world, "data_dir": str(data_dir)},
            env={"PMW_SOURCE": "sandbox", "PMW_DATA_DIR": str(data_dir), "PMW_PLATFORMS": PLATFORM},
        )
    shutil.rmtree(data_dir, ignore_errors=True)
    return Report(
        name="memory",
        title=f"Memory: a ({PLATFORM}, {DAY}) trades partition through the Dagster assets, in-process sandbox",
        columns=[
            "world",
            "trades landed",
            "markets",
            "largest market",
            "seconds",
            "trades/s",
            "sandbox arrays MB",
            "RSS before MB",
            "peak RSS MB",
        ],
        rows=[
            [
                name,
                f["rows"],
                f["markets"],
                f["largest_market"],
                f["seconds"],
                round(f["rows"] / f["seconds"]),
                f["sandbox_arrays_mb"],
                f["rss_before_mb"],
                f["peak_rss_mb"],
            ]
            for name, f in measured.items()
        ],
        figures={
            "platform": PLATFORM,
            "day": DAY,
            "worlds": {
                name: {**f, "world": (QUICK_WORLDS if quick else FULL_WORLDS)[name]} for name, f in measured.items()
            },
        },
        targets=[
            target
            for name, f in measured.items()
            for target in (
                Target(
                    f"{name}: peak RSS under {TARGET_MB} MB",
                    f["peak_rss_mb"] < TARGET_MB,
                    f"{f['peak_rss_mb']} MB, {f['peak_rss_mb'] / TARGET_MB:.2f}x the limit",
                ),
                Target(
                    f"{name}: every trade of the day landed",
                    f["rows"] == f["day_trades"],
                    f"{f['rows']:,} of {f['day_trades']:,}",
                ),
            )
        ],
        notes=["RSS before: the process once Python, Dagster and the sandbox's simulated markets are loaded"],
    )


def land_partition(world: dict[str, Any], data_dir: str) -> dict[str, Any]:
    """In the child: materialise markets then trades of the partition; what landed, how fast, peak RSS."""
    import dagster as dg
    import pyarrow.parquet as pq

    from benchmarks.sized_sandbox import SizedSandboxPipeline, sandbox_app
    from pipeline.defs.ingestion.assets import ingestion_assets
    from pipeline.engine.config import Settings
    from pipeline.engine.lake.store import Lake

    pipeline = SizedSandboxPipeline(data_dir=data_dir, end=DAY, **world)
    activities = [activity for _, activity in _activities(sandbox_app(pipeline.world()).world)]
    counts = [n for n in map(_day_trades, activities) if n]
    rss_before = _rss_mb()
    started = time.perf_counter()
    assets = {asset.key.to_user_string(): asset for asset in ingestion_assets(Settings.from_env(credentials=False))}
    result = dg.materialize(
        [assets["markets"], assets["trades"]],
        partition_key=dg.MultiPartitionKey({"platform": PLATFORM, "date": DAY}),
        resources={"pipeline": pipeline},
        instance=dg.DagsterInstance.ephemeral(),
    )
    seconds = time.perf_counter() - started
    if not result.success:
        raise RuntimeError("the partition did not land")
    landed = Lake(Path(data_dir) / "lake").partition_path("trades", PLATFORM, date.fromisoformat(DAY))
    return {
        "rows": pq.ParquetFile(landed).metadata.num_rows,
        "day_trades": sum(counts),
        "markets": len(counts),
        "largest_market": max(counts, default=0),
        "seconds": round(seconds, 1),
        "sandbox_arrays_mb": round(sum(map(_nbytes, activities)) / 2**20),
        "rss_before_mb": rss_before,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _activities(world: Any) -> list[tuple[Any, Any]]:
    """Every market of the platform with its simulated activity (simulating them all, as serving them will)."""
    from pipeline.engine.schema import Platform

    return [(market, world.activity(market)) for market in world.markets(Platform(PLATFORM))]


def _day_trades(activity: Any) -> int:
    """The day's trades as the pipeline asks them: taker rows only (a Polymarket match is one trade)."""
    start = int(datetime.combine(date.fromisoformat(DAY), datetime.min.time(), UTC).timestamp())
    times = activity.ts[activity.taker]
    return int(((times >= start) & (times < start + int(timedelta(days=1).total_seconds()))).sum())


def _nbytes(activity: Any) -> int:
    """The bytes of a market's simulated arrays: its price path and its trades' columns."""
    names = ("prices", "ts", "outcome", "side", "price", "size", "taker", "user")
    return sum(getattr(activity, name).nbytes for name in names)


def _rss_mb() -> int:
    """The current resident set of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024)
    raise RuntimeError("no VmRSS in /proc/self/status")
