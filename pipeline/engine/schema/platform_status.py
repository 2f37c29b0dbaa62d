"""What the service says about itself: `/platforms` and `/health`, observed on every ingestion run
(`platform_status`)."""

from __future__ import annotations

import polars as pl

from pipeline.engine.schema.core import PLATFORM_FIELD, Field, Table, iso_time, number, string

# -- what the service says about itself: /health and /platforms, observed on every ingestion run ------------
# The unified API's Platform list item and Health object (spec: Platform, Health), read as served; the statuses
# are free text whose only documented values are the samples (`available`, `pass`, `healthy`).
PLATFORM_HEALTH = (string("status"), iso_time("last_check"), number("response_time_ms"))
PLATFORM_ENDPOINT = (string("name"), Field("available", dtype=pl.Boolean()))
PLATFORM_FEATURES = tuple(Field(name, dtype=pl.Boolean())
                          for name in ("orderbook", "trades", "historical_data", "user_profiles"))
PLATFORM_FIELDS: tuple[Field, ...] = (
    string("id", required=True),
    string("name"),
    string("status"),
    Field("health", kind="struct", children=PLATFORM_HEALTH),
    Field("endpoints", kind="list", children=PLATFORM_ENDPOINT),
    Field("features", kind="struct", children=PLATFORM_FEATURES),
)
HEALTH_CHECK = (string("name"), string("status"), number("response_time_ms"))
HEALTH_FIELDS: tuple[Field, ...] = (
    string("status"),
    Field("checks", kind="list", children=HEALTH_CHECK),
    number("uptime"),
    string("version"),
    iso_time("timestamp"),
)

PLATFORM_STATUS = Table(
    name="platform_status",
    resource="Platform and Health",
    doc="What the unified API says about itself: each ingestion run's observation of `/platforms` (the run's "
        "platform) and `/health`, one row per observation, kept in the partition of the day it was made (not "
        "the run's day): earlier observations are never rewritten.",
    primary_key=("platform", "date", "observed_at"),
    time_column="observed_at",
    sort_key=("observed_at",),
    listed_by_id=False,
    rounds=True,
    references_markets=False,
    fields=(
        Field("observed_at", kind="timestamp", required=True,
              doc="when the run asked `/health` and `/platforms` (UTC, to the second)"),
        PLATFORM_FIELD,
        Field("listed", dtype=pl.Boolean(), required=True, doc="whether `/platforms` listed the platform"),
        Field("held", dtype=pl.Boolean(), required=True,
              doc="whether the platform's `status` reads as unavailable, so that the schedule, the backfill "
                  "sensor and `pmw backfill` hold its runs (docs/deployment.md)"),
        string("name", doc="the platform's name as listed"),
        string("status", doc="the platform's status as listed (the spec's sample: available)"),
        string("health_status", doc="`health.status` (the spec's sample: pass)"),
        iso_time("health_last_check", doc="`health.last_check`"),
        number("health_response_time_ms", doc="`health.response_time_ms`"),
        Field("endpoints", kind="list", children=PLATFORM_ENDPOINT, doc="each endpoint and whether it is available"),
        Field("features", kind="struct", children=PLATFORM_FEATURES),
        string("service_status", doc="`/health` status, the whole service's (the spec's sample: healthy)"),
        string("service_version", doc="`/health` version"),
        Field("service_checks", kind="list", children=HEALTH_CHECK, doc="`/health` checks"),
        string("error", doc="why `/platforms` or `/health` could not be read, or the platform's item was refused; "
                            "null when both answered"),
    ),
)

# Tables of what the service says about itself, landed by every ingestion run beside its partition's tables.
STATUS_TABLES: dict[str, Table] = {PLATFORM_STATUS.name: PLATFORM_STATUS}
