"""A simulated year of nightly runs: how big DAGSTER_HOME grows, with the run retention and without.

Each night one run lands a day's partition of a small asset through Dagster, in a home made from the repo's
pipeline/defs/dagster.yaml: its events, logs, a few KB of metadata (as the pipeline's previews) and its captured
output, in SQLite storage. After each night the retention (`pipeline/defs/automation/run_retention.py`) deletes the
runs older than RETENTION_NIGHTS nights, as the daily `run_retention` schedule does with PMW_RUN_RETENTION_DAYS.
The home's size is taken along the year; without retention it would grow by the first nights' growth per run, every
night. Every night's partition must still be recorded as landed at the end (the backfill sensor reads them).
"""

import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from benchmarks.report import Report, Target
from pipeline.defs.automation.run_retention import prune_runs

REPO_ROOT = Path(__file__).resolve().parent.parent
NIGHTS, QUICK_NIGHTS = 365, 40
RETENTION_NIGHTS, QUICK_RETENTION_NIGHTS = 30, 10
BOUND_MB = 10.0  # the simulated year's DAGSTER_HOME stays under this with 30 nights' retention (docs/operating.md)
PARTITIONS = dg.DailyPartitionsDefinition(start_date="2025-01-01")
PREVIEW = "| market | trades | volume |\n|---|---|---|\n" + "".join(
    f"| m-{n:04d} | {n * 7} | {n * 13.5:.2f} |\n" for n in range(60))  # about 2 KB, as a landing's preview
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dg.asset(partitions_def=PARTITIONS)
def nightly(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    for table in ("series", "events", "markets", "trades", "price_history"):
        context.log.info(f"{table} {context.partition_key}: landed")
    return dg.MaterializeResult(metadata={"dagster/row_count": 1000, "preview": dg.MetadataValue.md(PREVIEW)})


def run(quick: bool, workdir: Path) -> Report:
    nights = QUICK_NIGHTS if quick else NIGHTS
    keep = QUICK_RETENTION_NIGHTS if quick else RETENTION_NIGHTS
    workdir.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="retention-home-", dir=workdir))
    shutil.copy(REPO_ROOT / "pipeline" / "defs" / "dagster.yaml", home / "dagster.yaml")
    rows: list[list[object]] = []
    started = time.perf_counter()
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            created: list[float] = []
            for night in range(nights):
                dg.materialize([nightly], partition_key=PARTITIONS.get_partition_keys()[night], instance=instance,
                               run_config=QUIET)
                created.append(instance.get_run_records(limit=1)[0].create_timestamp.timestamp())
                if night == keep - 1:
                    per_run = _megabytes(home) / keep
                if night >= keep:
                    prune_runs(instance, datetime.fromtimestamp(created[night - keep + 1], UTC))
                if night + 1 in {keep, 90, 180, nights}:
                    rows.append([night + 1, len(instance.get_run_records()), round(_megabytes(home), 1)])
            recorded = len(instance.get_materialized_partitions(nightly.key))
        final = _megabytes(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    unbounded = per_run * nights
    return Report(
        name="retention",
        title=f"A simulated year: {nights} nightly runs, runs kept {keep} nights (DAGSTER_HOME, SQLite)",
        columns=["nights", "runs kept", "DAGSTER_HOME MB"],
        rows=rows,
        figures={"nights": nights, "retention_nights": keep, "final_mb": round(final, 1),
                 "per_run_mb": round(per_run, 3), "without_retention_mb": round(unbounded, 1),
                 "partitions_recorded": recorded, "seconds": round(time.perf_counter() - started, 1)},
        targets=[Target(f"DAGSTER_HOME under {BOUND_MB:.0f} MB after the year", final < BOUND_MB,
                        f"{final:.1f} MB (without retention about {unbounded:.0f} MB)"),
                 Target("every night's partition still recorded as landed", recorded == nights,
                        f"{recorded} of {nights}")],
    )


def _megabytes(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / 2**20
