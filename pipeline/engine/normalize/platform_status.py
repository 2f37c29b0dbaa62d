"""An observation of `/platforms` and `/health` -> rows of `platform_status`, and which platforms it holds.

One row per platform asked about, whatever the answers: a platform `/platforms` does not list has `listed` false,
an endpoint that could not be read or an item of the wrong JSON types (schema.PLATFORM_FIELDS, HEALTH_FIELDS)
leaves its columns null and says why in `error`. An observation is a handful of records: read as plain objects.

The hold rule (`held`): the spec shows one platform status, `available`, and says nothing of the others. A platform
is held when `/platforms` lists it with a status that is none of UP_STATUSES (`unavailable`, `maintenance`,
`down`, ...): its runs would read a service that says it cannot serve them. A platform not listed, or an answer
that could not be read, holds nothing: the runs themselves then find out, and their checks report what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import polars as pl

from pipeline.engine.normalize.native_frames import read
from pipeline.engine.raw_pages import Answered, ServiceStatus
from pipeline.engine.schema import HEALTH_FIELDS, PLATFORM_FIELDS, PLATFORM_STATUS, Field
from pipeline.engine.wire_times import parse_iso

# The statuses under which a platform's runs go ahead: the spec's sample, and the words a service uses for a
# platform that serves (perhaps slowly: `degraded` serves, and the runs' checks judge what landed).
UP_STATUSES = frozenset({"available", "operational", "online", "active", "up", "ok", "healthy", "degraded"})
Record = dict[str, Any]


def is_up(status: str | None) -> bool:
    """Whether a listed platform's status lets its runs go ahead (no status said: they go ahead)."""
    return status is None or status.strip().lower() in UP_STATUSES


def status_rows(status: ServiceStatus, platforms: Sequence[str], source: str) -> pl.DataFrame:
    """The observation's rows of `platform_status`, one per platform of `platforms`, in the partition of the day
    the observation was made."""
    listed, refused, unlisted = _platform_items(status.platforms)
    health, health_error = _health(status.health)
    rows = []
    for platform in platforms:
        item = listed.get(platform, {})
        errors = [e for e in (unlisted, refused.get(platform), health_error) if e]
        health_of = item.get("health") or {}
        rows.append({
            "observed_at": status.observed_at,
            "platform": platform,
            "listed": platform in listed or platform in refused,
            "held": platform in listed and not is_up(item.get("status")),
            "name": item.get("name"),
            "status": item.get("status"),
            "health_status": health_of.get("status"),
            "health_last_check": health_of.get("last_check"),
            "health_response_time_ms": health_of.get("response_time_ms"),
            "endpoints": _objects(PLATFORM_FIELDS, "endpoints", item.get("endpoints")),
            "features": _object(PLATFORM_FIELDS, "features", item.get("features")),
            "service_status": health.get("status"),
            "service_version": health.get("version"),
            "service_checks": _objects(HEALTH_FIELDS, "checks", health.get("checks")),
            "error": "; ".join(errors) or None,
            "date": status.observed_at.date(),
            "_source": source,
            "_fetched_at": status.observed_at,
        })
    schema = {**PLATFORM_STATUS.polars_schema, "health_last_check": pl.String()}
    served, parsed = pl.col("health_last_check"), parse_iso(pl.col("health_last_check"))
    unreadable = pl.when(served.is_not_null() & parsed.is_null()).then(
        pl.concat_str([pl.lit("GET /platforms: health.last_check is not an ISO-8601 time with a UTC offset: "),
                       served]))
    errors = pl.concat_str([pl.col("error"), unreadable], separator="; ", ignore_nulls=True)
    return pl.DataFrame(rows, schema=schema, strict=False).with_columns(
        parsed.alias("health_last_check"), pl.when(errors != "").then(errors).alias("error"))


def held_platforms(rows: pl.DataFrame) -> dict[str, str]:
    """The held platforms of an observation's rows, each with the service's status and reason, in one line."""
    return {row["platform"]: _reason(row) for row in rows.filter(pl.col("held")).iter_rows(named=True)}


def _reason(row: Mapping[str, Any]) -> str:
    health = f", health {row['health_status']!r}" if row["health_status"] is not None else ""
    checked = row["health_last_check"]
    last_check = f" (last check {checked:%Y-%m-%dT%H:%M:%SZ})" if isinstance(checked, datetime) else ""
    return f"the service's /platforms reports status {row['status']!r}{health}{last_check}"


def _platform_items(answer: Answered) -> tuple[dict[str, Record], dict[str, str], str | None]:
    """The items of a /platforms answer by id, the refused ones' reasons by id, and why there are none at all."""
    if answer.error is not None:
        return {}, {}, answer.error
    items = answer.body.get("platforms") if isinstance(answer.body, dict) else None
    if not isinstance(items, list):
        return {}, {}, "GET /platforms: no `platforms` list in the answer"
    native = read(PLATFORM_FIELDS, items)
    refused = {str(item.get("id")): f"GET /platforms: {reason}" for item, reason in native.rejected
               if isinstance(item, dict)}
    return {item["id"]: item for item in native.kept if isinstance(item.get("id"), str)}, refused, None


def _health(answer: Answered) -> tuple[Record, str | None]:
    """The Health object of a /health answer, or why there is none."""
    if answer.error is not None:
        return {}, answer.error
    data = answer.body.get("data") if isinstance(answer.body, dict) else None
    if not isinstance(data, dict):
        return {}, "GET /health: no `data` object in the answer"
    native = read(HEALTH_FIELDS, [data])
    if native.rejected:
        return {}, f"GET /health: {native.rejected[0][1]}"
    return data, None


def _children(fields: tuple[Field, ...], wire: str) -> tuple[Field, ...]:
    return next(f.children for f in fields if f.wire == wire)


def _object(fields: tuple[Field, ...], wire: str, value: Any) -> Record | None:
    """A nested object with its documented fields only (a server's extra fields are not columns)."""
    if not isinstance(value, dict):
        return None
    return {child.name: value.get(child.wire) for child in _children(fields, wire)}


def _objects(fields: tuple[Field, ...], wire: str, value: Any) -> list[Record] | None:
    if not isinstance(value, list):
        return None
    children = _children(fields, wire)
    return [{child.name: item.get(child.wire) for child in children} for item in value if isinstance(item, dict)]
