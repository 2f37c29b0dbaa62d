"""Normalization: raw JSON response bytes to Parquet, per table, on one core, against the naive baseline.

The responses are the sandbox's own (the bytes the unified API sends: trades pages of 1000, markets pages
of 250, price history 10 markets a call). The pipeline's path is the assets' path: parse each body as the
HTTP layer does, then ``land_stream`` (trades, price history) or ``normalize`` and ``Lake.write_partition``
(markets). The baseline (benchmarks/baseline.py) reads the same bodies. Both run in one process pinned to
one CPU, polars and pyarrow limited to one thread; each figure is the best of a few runs. So does the floor
(benchmarks/normalization_floor.py): the fastest exact-typed read of the same bodies and the Parquet write alone,
which says whether the targets are reachable at all.

For trades the pipeline's time is also split into stages, the profile that says what limits it.
"""

from __future__ import annotations

import bisect
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.report import Report, Target

TARGET_SPEEDUP = 10.0
TARGET_TRADES_PER_S = 300_000
DAY = date(2026, 11, 21)
FETCHED_AT = datetime(2026, 11, 22, tzinfo=UTC)
PLATFORMS = ("polymarket", "kalshi")


@dataclass(frozen=True)
class Sizes:
    trades_per_platform: int
    catalogue_series: int  # series per platform of the world whose markets and price history are read
    repeats: int


FULL = Sizes(trades_per_platform=300_000, catalogue_series=64, repeats=3)
QUICK = Sizes(trades_per_platform=5_000, catalogue_series=2, repeats=1)


def run(quick: bool, workdir: Path) -> Report:
    cpu = min(os.sched_getaffinity(0))
    figures = run_in_child(
        "benchmarks.normalization:measure",
        {"quick": quick, "data_dir": str(workdir / "normalization")},
        env={"POLARS_MAX_THREADS": "1"},
        cpus={cpu},
    )
    rows, targets, floors = [], [], []
    for table in ("trades", "markets", "price_history"):
        f = figures[table]
        speedup = f["pipeline_per_s"] / f["baseline_per_s"]
        floor_speedup = f["floor_per_s"] / f["baseline_per_s"]
        rows.append(
            [table, f["records"], f["bytes_per_record"], f["pipeline_per_s"], f["baseline_per_s"], round(speedup, 1),
             f["floor_per_s"], round(floor_speedup, 1)]
        )
        needed = f["baseline_per_s"] * TARGET_SPEEDUP
        target = f"{TARGET_SPEEDUP:.0f}x the baseline ({needed:,.0f} records/s)"
        floors.append(_floor_note(table, target, needed, f["floor_per_s"], f["baseline_per_s"]))
        targets.append(
            Target(
                f"{table}: at least {TARGET_SPEEDUP:.0f}x the baseline", speedup >= TARGET_SPEEDUP, f"{speedup:.1f}x"
            )
        )
    trades_per_s = figures["trades"]["pipeline_per_s"]
    targets.append(
        Target(
            f"trades: at least {TARGET_TRADES_PER_S:,} records/s",
            trades_per_s >= TARGET_TRADES_PER_S,
            f"{trades_per_s:,} records/s, {trades_per_s / TARGET_TRADES_PER_S:.2f}x the target",
        )
    )
    stages, trades = figures["trades_stages"], figures["trades"]
    notes = [
        *floors,
        _floor_note("trades", f"{TARGET_TRADES_PER_S:,} records/s", TARGET_TRADES_PER_S, trades["floor_per_s"],
                    trades["baseline_per_s"]),
        "trades, where the pipeline's one-core time goes (one timed run): "
        + ", ".join(f"{name} {stage['share']:.0%}" for name, stage in stages["stages"].items()),
        f"trades at Python's default garbage-collector thresholds: {stages['default_gc_per_s']:,} records/s "
        f"(tuned: {stages['per_s']:,})",
    ]
    return Report(
        name="normalisation",
        title=f"Normalization: raw JSON responses to Parquet, one core (CPU {cpu}), best of {figures['repeats']}",
        columns=["table", "records", "bytes/record", "pipeline rec/s", "baseline rec/s", "speed-up", "floor rec/s",
                 "floor speed-up"],
        rows=rows,
        figures=figures,
        targets=targets,
        notes=notes,
    )


def _floor_note(table: str, target: str, needed_per_s: float, floor_per_s: int, baseline_per_s: int) -> str:
    """Whether a target is above the floor (benchmarks/normalization_floor.py), so that no exact-typed path from
    the same bodies reaches it on this machine, or below it, so not ruled out (the floor neither sorts nor checks)."""
    verdict = "below the floor: not ruled out" if floor_per_s >= needed_per_s else "above the floor: NOT reachable"
    return (
        f"{table}: {target} is {verdict} (the floor, pyarrow.json with an explicit schema on one thread and the "
        f"Parquet write alone, does {floor_per_s:,} records/s, {floor_per_s / baseline_per_s:.1f}x the baseline)"
    )


@dataclass(frozen=True)
class Responses:
    """The response bodies of one partition of one table, as the API sent them."""

    table: str
    items_key: str
    platform: str
    bodies: list[bytes]
    market_ids: list[str]
    records: int


def measure(quick: bool, data_dir: str) -> dict[str, Any]:
    """In the child (pinned to one CPU): the figures of every table, and the trades' stages."""
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    sizes = QUICK if quick else FULL
    root = Path(data_dir)
    payloads = {
        "trades": _trade_responses(sizes),
        "markets": _catalogue_responses(sizes, "markets"),
        "price_history": _catalogue_responses(sizes, "price_history"),
    }
    figures: dict[str, Any] = {"repeats": sizes.repeats}
    for table, partitions in payloads.items():
        records = sum(p.records for p in partitions)
        pipeline_s = _best(sizes.repeats, _pipeline, partitions, root / "pipeline")
        baseline_s = _best(sizes.repeats, _baseline, partitions, root / "baseline")
        floor_s = _best(sizes.repeats, _floor, partitions, root / "floor")
        figures[table] = {
            "records": records,
            "bytes_per_record": round(sum(len(b) for p in partitions for b in p.bodies) / records),
            "pipeline_s": round(pipeline_s, 3),
            "baseline_s": round(baseline_s, 3),
            "pipeline_per_s": round(records / pipeline_s),
            "baseline_per_s": round(records / baseline_s),
            "floor_s": round(floor_s, 3),
            "floor_per_s": round(records / floor_s),
        }
    figures["trades_stages"] = _trade_stages(payloads["trades"], root / "stages", sizes.repeats)
    shutil.rmtree(root, ignore_errors=True)
    return figures


def _pipeline(partitions: list[Responses], lake_dir: Path) -> None:
    """The assets' path from response bodies to the lake."""
    from pipeline.engine.lake.store import Lake
    from pipeline.engine.lake.stream import land_stream
    from pipeline.engine.normalize.unified import normalize, normalized_chunks

    lake = Lake(_fresh(lake_dir))
    for p in partitions:
        if p.table == "markets":
            records = [record for body in p.bodies for record in _items(body, p.items_key)]
            done = normalize(p.table, records, platform=p.platform, day=DAY, source="sandbox", fetched_at=FETCHED_AT)
            lake.write_partition(p.table, p.platform, DAY, done.rows, done.rejects)
        else:
            chunks = normalized_chunks(p.table, _parsed(p), platform=p.platform, day=DAY, source="sandbox",
                                    fetched_at=FETCHED_AT)
            land_stream(lake, p.table, p.platform, DAY, _progressing(chunks, p.market_ids),
                        market_ids=frozenset(p.market_ids))


def _baseline(partitions: list[Responses], directory: Path) -> None:
    from benchmarks import baseline

    _fresh(directory)
    for p in partitions:
        baseline.land(p.table, p.bodies, p.items_key, p.platform, DAY, directory / f"{p.table}-{p.platform}.parquet")


def _floor(partitions: list[Responses], directory: Path) -> None:
    from benchmarks import normalization_floor

    normalization_floor.land(partitions, _fresh(directory))


def _trade_stages(partitions: list[Responses], lake_dir: Path, repeats: int) -> dict[str, Any]:
    """Where the trades pipeline's time goes: parsing and normalizing timed inside the run itself (a few
    hundred timed calls, no profiler overhead), the rest (sorting, checks, Parquet) is what remains; and
    the same pipeline at Python's default garbage-collector thresholds."""
    from pipeline.engine.lake import stream

    records = sum(p.records for p in partitions)
    runs = [_timed_stages(partitions, lake_dir) for _ in range(repeats)]
    best = min(runs, key=lambda stages: sum(stages.values()))
    total = sum(best.values())
    tuned = stream.cyclic_gc_per_chunk
    stream.cyclic_gc_per_chunk = nullcontext  # type: ignore[assignment]
    try:
        default_gc_s = min(sum(_timed_stages(partitions, lake_dir).values()) for _ in range(repeats))
    finally:
        stream.cyclic_gc_per_chunk = tuned
    return {
        "stages": {name: {"seconds": round(s, 3), "share": round(s / total, 3)} for name, s in best.items()},
        "per_s": round(records / total),
        "default_gc_per_s": round(records / default_gc_s),
    }


def _timed_stages(partitions: list[Responses], lake_dir: Path) -> dict[str, float]:
    """One run of the trades pipeline, its parse and normalize calls timed as they happen."""
    from pipeline.engine.lake.store import Lake
    from pipeline.engine.lake.stream import land_stream
    from pipeline.engine.normalize import unified
    from pipeline.engine.normalize.unified import normalized_chunks

    spent = {"parse": 0.0, "normalize": 0.0}
    normalize = unified.normalize

    def timed_normalize(*arguments: Any, **options: Any) -> Any:
        started = time.perf_counter()
        try:
            return normalize(*arguments, **options)
        finally:
            spent["normalize"] += time.perf_counter() - started

    def timed_records(p: Responses) -> Iterator[dict[str, Any]]:
        for body in p.bodies:
            started = time.perf_counter()
            items = _items(body, p.items_key)
            spent["parse"] += time.perf_counter() - started
            yield from items

    lake = Lake(_fresh(lake_dir))
    unified.normalize = timed_normalize
    started = time.perf_counter()
    try:
        for p in partitions:
            chunks = normalized_chunks(p.table, timed_records(p), platform=p.platform, day=DAY, source="sandbox",
                                    fetched_at=FETCHED_AT)
            land_stream(lake, p.table, p.platform, DAY, _progressing(chunks, p.market_ids),
                        market_ids=frozenset(p.market_ids))
    finally:
        unified.normalize = normalize
    total = time.perf_counter() - started
    return {**spent, "sort, check, write": total - spent["parse"] - spent["normalize"]}


def _progressing(chunks: Iterable[Any], market_ids: list[str]) -> Iterator[Any]:
    """The chunks of markets read in id order, each followed by the `MarketsDone` the sources would have sent
    by then: every market before the chunk's last one is complete."""
    from pipeline.engine.normalized import MarketsDone

    ordered = sorted(market_ids)
    for chunk in chunks:
        yield chunk
        if chunk.rows.height:
            before = bisect.bisect_left(ordered, chunk.rows["market_id"][-1])
            if before:
                yield MarketsDone(ordered[before - 1])


def _parsed(p: Responses) -> Iterator[dict[str, Any]]:
    for body in p.bodies:
        yield from _items(body, p.items_key)


def _items(body: bytes, items_key: str) -> list[dict[str, Any]]:
    import orjson

    return orjson.loads(body)[items_key]


def _best(repeats: int, action: Callable[..., Any], *arguments: Any) -> float:
    """The shortest wall time of ``repeats`` runs: the least disturbed by the machine's other work."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action(*arguments)
        times.append(time.perf_counter() - started)
    return min(times)


def _fresh(directory: Path) -> Path:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


# -- the responses ---------------------------------------------------------------------------------------


def _trade_responses(sizes: Sizes) -> list[Responses]:
    """Pages of 1000 trades of the busiest markets of a one-day world, market by market in id order."""
    from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig, sandbox_client

    world = WorldConfig(
        seed=7,
        end=DAY,
        days=1,
        series_per_platform=3,
        events_per_series=2,
        markets_per_event=3,
        trades_per_market_day=sizes.trades_per_platform / 2,
        multivariate_markets=0,
    )
    app = SandboxApp(SandboxConfig(world=world))
    partitions = []
    with sandbox_client(app) as client:
        for platform in PLATFORMS:
            ids = sorted(m.id for m in app.world.markets(_platform(platform)))
            bodies, used, records = [], [], 0
            for market_id in ids:
                used.append(market_id)
                for body, count in _pages(client, "/trades", "trades", {"market_id": market_id, "limit": 1000}):
                    bodies.append(body)
                    records += count
                    if records >= sizes.trades_per_platform:
                        break
                if records >= sizes.trades_per_platform:
                    break
            partitions.append(Responses("trades", "trades", platform, bodies, used, records))
    return partitions


def _catalogue_responses(sizes: Sizes, table: str) -> list[Responses]:
    """Every market of a world with many, as listed (pages of 250), or their hourly price history of the
    day (10 markets a call)."""
    from pipeline.engine.sources.unified import day_bounds
    from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig, sandbox_client

    world = WorldConfig(
        seed=7,
        end=DAY,
        days=1,
        series_per_platform=sizes.catalogue_series,
        events_per_series=8,
        markets_per_event=8,
        trades_per_market_day=20.0,
        multivariate_markets=0,
    )
    app = SandboxApp(SandboxConfig(world=world))
    start, end = day_bounds(DAY)
    partitions = []
    with sandbox_client(app) as client:
        for platform in PLATFORMS:
            ids = sorted(m.id for m in app.world.markets(_platform(platform)))
            if table == "markets":
                pages = list(_pages(client, "/markets", "markets", {"platform": platform, "limit": 250}))
                partitions.append(
                    Responses(table, "markets", platform, [b for b, _ in pages], ids, sum(n for _, n in pages))
                )
                continue
            bodies, records = [], 0
            for i in range(0, len(ids), 10):
                params = {
                    "market_ids": ",".join(ids[i : i + 10]),
                    "start_ts": start,
                    "end_ts": end - 1,
                    "interval": 60,
                    "limit": 5000,
                }
                response = client.get("/price-history", params=params)
                bodies.append(response.content)
                records += len(response.json()["data"])
            partitions.append(Responses(table, "data", platform, bodies, ids, records))
    return partitions


def _pages(client: Any, path: str, items_key: str, params: dict[str, Any]) -> Iterator[tuple[bytes, int]]:
    """Every page of a cursor-paginated list: its body and how many items it holds."""
    cursor = None
    while True:
        response = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        response.raise_for_status()
        page = response.json()
        yield response.content, len(page[items_key])
        cursor = page["pagination"]["next_cursor"]
        if not page["pagination"]["has_more"]:
            return


def _platform(name: str) -> Any:
    from pipeline.engine.schema import Platform

    return Platform(name)
