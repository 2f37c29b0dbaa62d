"""One way to land a table's partition, for every domain: write it, check it, report it.

The rows are written into the lake (a partition replaced whole under the replacement rule, a stream too long to
hold written a market at a time, or a round landed beside the day's earlier rounds), the warehouse's raw views are
refreshed, the table's checks and reconciliations run on what landed, and Dagster is told: the materialisation
(what was written, what the caller adds, a preview) and then each check's result, named by its asset.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import dagster as dg
import polars as pl

from pipeline.defs.common.reporting import Landed, check_result, preview
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.checks import CheckOutcome, PartitionContext, reconcile, run_checks
from pipeline.engine.lake.replacement import ReplacementRule
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.stream import land_stream
from pipeline.engine.lake.writes import Approve, PartitionWrite
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.reconciliation import price_volume
from pipeline.engine.schema import REJECTS_SCHEMA, lake_tables
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.warehouse.views import ensure_raw_views

CHECKSUM = "checksum"  # the materialisation's metadata: the landed data file's SHA-256
Rows = Normalized | Iterable[Normalized | MarketsDone]  # a partition's rows whole, or as a stream of chunks
Metadata = Mapping[str, Any] | Callable[[], Mapping[str, Any]]  # a callable: read once the rows are written


@dataclass(frozen=True)
class _Written:
    """What a write landed, how many rows the partition holds now, the rows checked and shown, the checks' outcomes
    (but the reconciliations), and what landed per market (a stream's, for the reconciliations)."""

    write: PartitionWrite
    row_count: int
    rows: pl.DataFrame
    outcomes: list[CheckOutcome]
    per_market: pl.DataFrame | None = None
    about: Mapping[str, Any] = field(default_factory=dict)  # a round's: the day's rounds, the round's rows


def land(pipeline: PipelineResource, table: str, ctx: PartitionContext, rows: Rows, metadata: Metadata | None = None, *,
         figures: Callable[[], ServiceFigures | None] | None = None,
         round_at: datetime | None = None, allow_shrink: bool = False) -> Iterator[Landed]:
    """Land `rows` into the (table, ctx.platform, ctx.day) partition and say what happened.

    `rows` whole replace the partition unless the replacement rule refuses it; a stream of chunks is written and
    checked a market at a time (trades are then held against the day's price history too); with `round_at`, the
    rows are one round beside the day's earlier ones, and the checks run on the whole day (the round's rejects are
    counted, not checked). `allow_shrink` (the run's pmw/allow_shrink tag) lets a rerun shrink the partition past
    PMW_SHRINK_TOLERANCE. The reconciliations hold what landed against `ctx`, the rows the partition held before and
    the service's `figures` (asked once the rows are written: a stream's source knows them only then). The
    materialisation's metadata is what was written (the data file's checksum among it, for the freshness check),
    then `metadata`, then a preview; each check's result follows it."""
    settings, lake = pipeline.settings(), pipeline.lake()
    if round_at is not None:
        assert isinstance(rows, Normalized)
        written = _write_round(lake, table, ctx, rows, round_at)
    else:
        approve = ReplacementRule.of(settings, allow_shrink).approver(table, ctx.platform, ctx.day)
        if isinstance(rows, Normalized):
            write = lake.write_partition(table, ctx.platform, ctx.day, rows.rows, rows.rejects, approve)
            written = _Written(write, write.rows, rows.rows, run_checks(table, rows.rows, ctx, rows.rejects))
        else:
            written = _write_stream(lake, table, ctx, rows, approve)
    ensure_raw_views(settings.warehouse_path, lake)
    if written.write.rows_before is not None:
        ctx = replace(ctx, replaced=(written.write.rows_before, written.row_count))
    if figures is not None:
        ctx = replace(ctx, figures=figures())
    if table == "trades" and written.per_market is not None:
        # Trades are held against the day's price history too, once landed (in a run its step comes first: steps of
        # one level run in name order; without it, or from an earlier run of the day, the evidence is as true).
        priced = lake.read_partition_batches("price_history", ctx.platform, ctx.day, ["market_id", "volume"])
        ctx = replace(ctx, price_volume=price_volume(priced))
    outcomes = written.outcomes + ([] if round_at else reconcile(table, written.rows, ctx, written.per_market))
    key = dg.AssetKey(table)
    yield dg.MaterializeResult(asset_key=key, metadata={
        "dagster/row_count": written.row_count,
        "rejects": written.write.rejects,
        "bytes_written": written.write.bytes_written,
        "path": str(written.write.path),
        **({CHECKSUM: written.write.checksum} if written.write.checksum else {}),
        **written.about,
        **(metadata() if callable(metadata) else metadata or {}),
        "preview": preview(written.rows),
    })
    for outcome in outcomes:
        yield check_result(key, outcome)


def _write_stream(lake: Lake, table: str, ctx: PartitionContext, chunks: Iterable[Normalized | MarketsDone],
                  approve: Approve) -> _Written:
    landed = land_stream(lake, table, ctx.platform, ctx.day, chunks, market_ids=ctx.market_ids, approve=approve)
    return _Written(landed.written, landed.written.rows, landed.head, landed.outcomes, landed.per_market)


def _write_round(lake: Lake, table: str, ctx: PartitionContext, rows: Normalized, round_at: datetime) -> _Written:
    write = lake.write_round(table, ctx.platform, ctx.day, round_at, rows.rows, rows.rejects)
    day_rows = lake.read_partition(table, ctx.platform, ctx.day)
    assert day_rows is not None  # this round has just landed in it
    outcomes = run_checks(table, day_rows, ctx, pl.DataFrame(schema=REJECTS_SCHEMA))
    time_column = lake_tables()[table].time_column
    assert time_column is not None  # a table landed in rounds names each round by its time
    return _Written(write, day_rows.height, day_rows.filter(pl.col(time_column) == round_at), outcomes,
                    about={"rounds": day_rows[time_column].n_unique(), "round_rows": write.rows})
