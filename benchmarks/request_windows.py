"""Requests per window: a backfill of 1, 7 and 30 days, each one window per platform, against the window's
lower bound, with its wall time and peak resident memory.

Each window is ``pmw backfill``'s own code (every asset through Dagster, one run per partition, the window's
trades and price history read in one sweep) over the in-process sandbox of a 30-day world at the default
sizes, in a fresh process with a private data directory; the bound is benchmarks/request_bound.py for the
window (the catalogue listed once, each market's trades paged once back to the window's start, price history
10 markets a call and one call per 5,000 points). Each run also observes the service's status (`/health` and
`/platforms`, two requests a partition, landed in `platform_status`): they are shown beside the window's
requests, not in its ratio, which measures what reading the data costs against the least it can cost.
"""

from __future__ import annotations

import resource
import shutil
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.report import Report, Target

TARGET_RATIO = 1.1
TARGET_MB = 1024  # a 30-day window lands with peak memory under 1 GB
SEED = 7
END = date(2026, 11, 21)
WORLD_DAYS = 30
PLATFORMS = ("polymarket", "kalshi")


def run(quick: bool, workdir: Path) -> Report:
    windows = (1,) if quick else (1, 7, 30)
    platforms = PLATFORMS[1:] if quick else PLATFORMS  # quick: one day of the lighter platform proves it runs
    world_days = 1 if quick else WORLD_DAYS
    rows, figures, targets = [], {}, []
    for days in windows:
        data_dir = workdir / f"window-{days}"
        shutil.rmtree(data_dir, ignore_errors=True)  # a catalogue cached by an earlier run would save requests
        figure = run_in_child(
            "benchmarks.request_windows:backfill",
            {"days": days, "platforms": list(platforms), "world_days": world_days},
            env={
                "PMW_SOURCE": "sandbox",
                "PMW_DATA_DIR": str(data_dir),
                "PMW_SANDBOX_SEED": str(SEED),
                "PMW_SANDBOX_END": END.isoformat(),
                "PMW_SANDBOX_DAYS": str(world_days),
                "PMW_SANDBOX_FAULTS": "",
                "PMW_PLATFORMS": ",".join(platforms),
                "PMW_RATE_LIMIT_DB": str(data_dir / "rate-limit.sqlite"),
                "DAGSTER_HOME": "",  # a throwaway instance, not the user's
            },
        )
        shutil.rmtree(data_dir, ignore_errors=True)
        made, bound = sum(figure["made"].values()), sum(figure["fewest"].values())
        ratio = round(made / bound, 3)
        rows.append([days, figure["partitions"], made, bound, ratio, figure["status"], figure["trades"],
                     figure["seconds"], figure["peak_rss_mb"]])
        figures[f"{days}_days"] = {**figure, "ratio": ratio}
        targets.append(Target(f"{days}-day window within {TARGET_RATIO}x the lower bound", made <= TARGET_RATIO * bound,
                              f"{ratio:.3f}x: {made} requests, at least {bound} needed"))
    if 30 in windows:
        peak = figures["30_days"]["peak_rss_mb"]
        targets.append(Target(f"30-day window: peak RSS under {TARGET_MB} MB", peak < TARGET_MB,
                              f"{peak} MB, {peak / TARGET_MB:.2f}x the limit"))
    return Report(
        name="windows",
        title=f"Requests per window: backfills of {', '.join(platforms)} ending {END}, sandbox seed {SEED}, "
              f"{world_days}-day world",
        columns=["days", "partitions", "requests", "lower bound", "ratio", "status requests", "trades landed",
                 "seconds", "peak RSS MB"],
        rows=rows,
        figures=figures,
        targets=targets,
    )


def backfill(days: int, platforms: list[str], world_days: int) -> dict[str, Any]:
    """In the child: backfill the window, then count its requests against the window's bound."""
    from benchmarks.request_bound import fewest_requests
    from pipeline.cli.backfill.partitions import run_backfill
    from pipeline.engine.schema import Platform
    from pmw_sandbox.catalogue import WorldConfig
    from pmw_sandbox.world import World

    first = END - timedelta(days=days - 1)
    started = time.perf_counter()
    reports = run_backfill(platforms, first, END, say=lambda _: None)
    seconds = round(time.perf_counter() - started, 1)
    failed = [r.line() for r in reports if not r.success]
    if failed:
        raise RuntimeError(f"backfill failed: {failed}")
    world = World(WorldConfig(seed=SEED, end=END, days=world_days))
    fewest = sum((fewest_requests(world, Platform(p), first, last=END) for p in platforms), Counter())
    return {
        "made": dict(sum((r.requests for r in reports), Counter())),
        "status": sum(sum(r.status_requests.values()) for r in reports),
        "fewest": dict(fewest),
        "partitions": len(reports),
        "trades": sum(r.rows.get("trades", 0) for r in reports),
        "seconds": seconds,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
