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

from pipeline.defs.common.landing import land
from pipeline.defs.common.reporting import Landed, check_result
from pipeline.defs.common.resources import PipelineResource, emulator_for
from pipeline.defs.common.specs import partition_of
from pipeline.defs.ingestion.assets import ingestion_asset
from pipeline.engine.checks import PartitionContext, run_checks
from pipeline.engine.config import Settings
from pipeline.engine.normalize.partitions.platform_status import observed_rows
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import PLATFORM_STATUS, REJECTS_SCHEMA, Source
from pipeline.engine.sources.factory import open_unified_source

TABLE = PLATFORM_STATUS.name
NOTHING_TO_ASK = "PMW_SOURCE=direct reads the platforms' own APIs, which have no /health or /platforms"


def platform_status_asset(settings: Settings) -> dg.AssetsDefinition:
    """The asset observing the service, partitioned and pooled as the ingestion assets."""

    @ingestion_asset(settings, TABLE)
    def platform_status(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, run_day = partition_of(context)
        run_settings = pipeline.settings()
        if run_settings.source == Source.DIRECT:
            context.log.info("platform_status: %s", NOTHING_TO_ASK)
            yield dg.MaterializeResult(metadata={"dagster/row_count": 0, "observed": NOTHING_TO_ASK})
            yield from _checks(pl.DataFrame(schema=PLATFORM_STATUS.polars_schema), platform, run_day)
            return
        with open_unified_source(run_settings, emulator_for(run_settings)) as unified:
            status, row = observed_rows(unified.http, [platform], run_settings.source.value)
            requests = unified.http.stats.snapshot()
        seen = row.row(0, named=True)
        if seen["error"]:
            context.log.warning("platform_status %s: %s", platform, seen["error"])
        observed = {"observed_at": status.observed_at.isoformat(),
                    "observed_day": status.observed_at.date().isoformat(), "status": seen["status"] or "",
                    "held": seen["held"], "service_status": seen["service_status"] or "", "error": seen["error"] or "",
                    **requests.as_metadata()}
        yield from land(pipeline, TABLE, PartitionContext(platform, status.observed_at.date()),
                        Normalized(row, pl.DataFrame(schema=REJECTS_SCHEMA)), observed,
                        round_at=status.observed_at)

    return platform_status


def _checks(day_rows: pl.DataFrame, platform: str, day: date) -> Iterator[Landed]:
    """The table's checks on the observation day's rows (every observation of the platform on that day)."""
    no_rejects = pl.DataFrame(schema=REJECTS_SCHEMA)
    for outcome in run_checks(TABLE, day_rows, PartitionContext(platform, day), no_rejects):
        yield check_result(dg.AssetKey(TABLE), outcome)
