"""`platform_status`: every ingestion run observes what the unified API says about itself, `/health` and
`/platforms`, and lands its platform's row.

The asset is partitioned like the run's other assets (platform, day), but the row lands in the partition of the
day the observation was made, as a file of its own named by its second (`Lake.write_round`): the table keeps
every observation over time, and a run of an old day never rewrites what was observed then. Re-running a
partition gives its tables the same rows, and adds one observation here: a new fact (what the service said at
that moment), never a changed one. An observation that could not be made whole (an endpoint that failed, an item
of the wrong types) lands with its `error`; nothing here fails the run. The platforms' own APIs
(PMW_SOURCE=direct) have no /health or /platforms: the asset lands nothing and says so.
"""

from collections.abc import Iterator
from datetime import date

import dagster as dg
import polars as pl

from pipeline.defs.ingestion.assets import Landed, _check_result, _preview, ingestion_asset, partition_of
from pipeline.defs.resources import PipelineResource, emulator_for
from pipeline.engine.checks import PartitionContext, run_checks
from pipeline.engine.normalize.partitions.platform_status import observed_rows
from pipeline.engine.schema import PLATFORM_STATUS, REJECTS_SCHEMA, Source
from pipeline.engine.sources.factory import open_unified_source
from pipeline.engine.warehouse.views import ensure_raw_views

TABLE = PLATFORM_STATUS.name
NOTHING_TO_ASK = "PMW_SOURCE=direct reads the platforms' own APIs, which have no /health or /platforms"


@ingestion_asset(TABLE)
def platform_status(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
    platform, run_day = partition_of(context)
    settings = pipeline.settings()
    if settings.source == Source.DIRECT:
        context.log.info("platform_status: %s", NOTHING_TO_ASK)
        yield dg.MaterializeResult(metadata={"dagster/row_count": 0, "observed": NOTHING_TO_ASK})
        yield from _checks(pl.DataFrame(schema=PLATFORM_STATUS.polars_schema), platform, run_day)
        return
    with open_unified_source(settings, emulator_for(settings)) as unified:
        status, row = observed_rows(unified.http, [platform], settings.source.value)
        requests = unified.http.stats.snapshot()
    day = status.observed_at.date()
    lake = pipeline.lake()
    written = lake.write_round(TABLE, platform, day, status.observed_at, row)
    ensure_raw_views(settings.warehouse_path, lake)
    day_rows = lake.read_partition(TABLE, platform, day)
    assert day_rows is not None  # the observation has just landed in it
    seen = row.row(0, named=True)
    if seen["error"]:
        context.log.warning("platform_status %s: %s", platform, seen["error"])
    yield dg.MaterializeResult(metadata={
        "dagster/row_count": day_rows.height,
        "observed_at": status.observed_at.isoformat(),
        "observed_day": day.isoformat(),
        "status": seen["status"] or "",
        "held": seen["held"],
        "service_status": seen["service_status"] or "",
        "error": seen["error"] or "",
        "path": str(written.path),
        **requests.as_metadata(),
        "preview": _preview(row),
    })
    yield from _checks(day_rows, platform, day)


def _checks(day_rows: pl.DataFrame, platform: str, day: date) -> Iterator[Landed]:
    """The table's checks on the observation day's rows (every observation of the platform on that day)."""
    no_rejects = pl.DataFrame(schema=REJECTS_SCHEMA)
    for outcome in run_checks(TABLE, day_rows, PartitionContext(platform, day), no_rejects):
        yield _check_result(dg.AssetKey(TABLE), outcome)
