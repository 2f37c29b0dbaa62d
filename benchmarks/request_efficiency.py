"""Request efficiency: the requests a backfill makes per table, next to the fewest the API allows.

The backfill is ``pmw backfill``'s own code (every asset through Dagster) over the in-process sandbox, in a
fresh process with a private data directory; the bound is benchmarks/request_bound.py, from what the API
says. A run lists the catalogue once (it is cached) and reads a platform's days as one window (one sweep), so
over several days the bound is that of the window.
"""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.report import Report, Target

TARGET_RATIO = 1.1
SEED = 7
END = date(2026, 11, 21)  # the sandbox world's last day, the last day backfilled
PLATFORMS = ("polymarket", "kalshi")
TABLE_OF_ENDPOINT = {
    "/series": "series",
    "/events": "events",
    "/markets": "markets",
    "/trades": "trades",
    "/price-history": "price_history",
}


def run(quick: bool, workdir: Path) -> Report:
    days = 1 if quick else 3
    platforms = PLATFORMS[:1] if quick else PLATFORMS  # quick: one day of one platform proves it runs
    data_dir = workdir / "requests"
    shutil.rmtree(data_dir, ignore_errors=True)  # a catalogue cached by an earlier run would save requests
    figures = run_in_child(
        "benchmarks.request_efficiency:backfill",
        {"days": days, "platforms": list(platforms)},
        env={
            "PMW_SOURCE": "sandbox",
            "PMW_DATA_DIR": str(data_dir),
            "PMW_SANDBOX_SEED": str(SEED),
            "PMW_SANDBOX_END": END.isoformat(),
            "PMW_SANDBOX_FAULTS": "",
            "PMW_PLATFORMS": ",".join(platforms),
            "PMW_RATE_LIMIT_DB": str(data_dir / "rate-limit.sqlite"),
            "DAGSTER_HOME": "",  # a throwaway instance, not the user's
        },
    )
    made, fewest = Counter(figures["made"]), Counter(figures["fewest"])
    rows = [
        [
            TABLE_OF_ENDPOINT[endpoint],
            endpoint,
            made[endpoint],
            fewest[endpoint],
            round(made[endpoint] / fewest[endpoint], 3) if fewest[endpoint] else None,
        ]
        for endpoint in TABLE_OF_ENDPOINT
    ]
    total, bound = sum(made.values()), sum(fewest.values())
    rows.append(["all", "", total, bound, round(total / bound, 3)])
    first = END - timedelta(days=days - 1)
    return Report(
        name="requests",
        title=f"Request efficiency: backfill of {', '.join(platforms)} from {first} to {END}, sandbox seed {SEED}",
        columns=["table", "endpoint", "requests", "fewest possible", "ratio"],
        rows=rows,
        figures={
            **figures,
            "first_day": first.isoformat(),
            "last_day": END.isoformat(),
            "ratio": round(total / bound, 3),
        },
        targets=[
            Target(
                f"within {TARGET_RATIO}x the fewest requests",
                total <= TARGET_RATIO * bound,
                f"{total / bound:.3f}x: {total} requests, at least {bound} needed",
            )
        ],
    )


def backfill(days: int, platforms: list[str]) -> dict[str, Any]:
    """In the child: backfill the days, then count requests per endpoint against the bound."""
    from benchmarks.request_bound import fewest_requests
    from pipeline.cli.backfill.partitions import run_backfill
    from pipeline.engine.schema import Platform
    from pmw_sandbox.catalogue import WorldConfig
    from pmw_sandbox.world import World

    first = END - timedelta(days=days - 1)
    reports = run_backfill(platforms, first, END, say=lambda _: None)
    failed = [r.line() for r in reports if not r.success]
    if failed:
        raise RuntimeError(f"backfill failed: {failed}")
    world = World(WorldConfig(seed=SEED, end=END))
    fewest: Counter[str] = Counter()
    for platform in platforms:  # the days are one window per platform, read in one sweep
        fewest += fewest_requests(world, Platform(platform), first, last=END)
    made = sum((r.requests for r in reports), Counter())
    return {"made": dict(made), "fewest": dict(fewest), "partitions": len(reports)}
