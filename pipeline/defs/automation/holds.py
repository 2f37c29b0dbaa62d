"""Holds: no run starts for a platform that the unified API's `/platforms` reports unavailable.

The daily schedule, the backfill sensor and `pmw backfill` ask `/platforms` (and `/health`) once before they start
runs, and leave out the platforms it holds (pipeline.engine.normalize.platform_status: the hold rule), saying why: the
schedule's and the sensor's tick, the command's output. Asking costs two requests of the budget, with few attempts
and a short deadline: a tick must not wait out a long outage. An answer that cannot be had holds nothing (the runs
then meet the outage themselves, and fail or report it), and so does a source without `/platforms`
(PMW_SOURCE=direct).

A held platform has no run to observe the service for it, so the observation that held it lands in
`platform_status` here, unless the day's latest observation of the platform already
said the same (a sensor ticking through an outage would otherwise land a file a minute).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import polars as pl

from pipeline.defs.common.resources import emulator_for
from pipeline.engine.config import ConfigError, Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.partitions.platform_status import observed_rows
from pipeline.engine.normalize.platform_status import held_platforms
from pipeline.engine.schema import PLATFORM_STATUS, Source
from pipeline.engine.sources.factory import open_unified_source
from pipeline.engine.sources.http import ApiError

# A probe's bounds: at most 3 attempts of 10 s each, 5 s apart at most, per endpoint.
PROBE_ATTEMPTS = 3
PROBE_TIMEOUT_S = 10.0
PROBE_BACKOFF_S = 5.0


@dataclass(frozen=True)
class Holds:
    """The held platforms, each with the service's status and reason; and why nothing could be asked, if so."""

    held: dict[str, str] = field(default_factory=dict)
    unasked: str = ""
    requests: Counter[str] = field(default_factory=Counter)  # what asking cost, by endpoint

    def line(self, platform: str) -> str:
        return f"{platform}: {self.held[platform]}"

    def summary(self) -> str:
        """One line for a tick's log or skip reason: the held platforms and why, or why none could be held."""
        said = [f"held {self.line(platform)}" for platform in sorted(self.held)]
        if self.unasked:
            said.append(f"platform status not read ({self.unasked}): no platform held")
        return "; ".join(said)


def platform_holds(platforms: Iterable[str], settings: Settings) -> Holds:
    """Which of `platforms` the service holds, by one observation."""
    wanted = list(dict.fromkeys(platforms))
    if not wanted:
        return Holds()
    try:
        settings.check_credentials()
    except ConfigError as error:
        return Holds(unasked=str(error))
    if settings.source == Source.DIRECT:
        return Holds()  # the platforms' own APIs have no /platforms
    probe = replace(settings, max_attempts=min(settings.max_attempts, PROBE_ATTEMPTS),
                    http_timeout_s=min(settings.http_timeout_s, PROBE_TIMEOUT_S),
                    http_deadline_s=min(settings.http_deadline_s, PROBE_TIMEOUT_S),
                    max_backoff_s=min(settings.max_backoff_s, PROBE_BACKOFF_S))
    try:
        with open_unified_source(probe, emulator_for(probe)) as unified:
            status, rows = observed_rows(unified.http, wanted, probe.source.value)
            requests = unified.http.stats.snapshot().by_endpoint
    except (ApiError, ConfigError, OSError) as error:
        return Holds(unasked=f"{type(error).__name__}: {error}")
    if status.platforms.error is not None:
        return Holds(unasked=status.platforms.error, requests=requests)
    rows = rows.filter(pl.col("held"))
    keep_new_states(Lake.of(settings), rows)
    return Holds(held_platforms(rows), requests=requests)


def keep_new_states(lake: Lake, rows: pl.DataFrame) -> None:
    """Land each row in `platform_status` unless the day's latest observation of its platform said the same."""
    same = ["listed", "held", "status", "health_status", "service_status", "error"]
    for row in rows.partition_by("platform"):
        platform, day, observed_at = row["platform"][0], row["date"][0], row["observed_at"][0]
        landed = lake.read_partition(PLATFORM_STATUS.name, platform, day)
        latest = landed.sort("observed_at").tail(1).select(same) if landed is not None else None
        if latest is None or not latest.equals(row.select(same)):
            lake.write_round(PLATFORM_STATUS.name, platform, day, observed_at, row)
