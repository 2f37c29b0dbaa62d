"""How a landing is reported to Dagster: a preview of its rows, its checks' results, the service's own figures."""

import math
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any

import dagster as dg
import polars as pl

from pipeline.engine.checks import CheckOutcome
from pipeline.engine.service_figures import ServiceFigures

PREVIEW_ROWS = 5
Landed = dg.MaterializeResult | dg.AssetCheckResult  # what a landing asset yields
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def preview(frame: pl.DataFrame) -> dg.MetadataValue:
    """The first rows as a Markdown table, every value cut to 40 characters."""
    def cell(value: Any) -> str:
        return ("" if value is None else str(value)).replace("|", "/").replace("\n", " ")[:40]

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * frame.width]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.head(PREVIEW_ROWS).iter_rows()]
    return dg.MetadataValue.md("\n".join(lines))


def check_result(asset_key: dg.AssetKey, outcome: CheckOutcome) -> dg.AssetCheckResult:
    """A check's outcome as Dagster records it: the violations and, as JSON, the first offending rows; a
    failed check that holds back the SQL models is an error, any other a warning."""
    metadata: dict[str, Any] = {"violations": outcome.violations}
    metadata.update({name: dg.MetadataValue.json(json_safe(value)) for name, value in outcome.figures.items()})
    if outcome.examples:
        metadata["examples"] = dg.MetadataValue.json(json_safe(outcome.examples))
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=outcome.name,
        passed=outcome.passed,
        severity=dg.AssetCheckSeverity.ERROR if outcome.blocking else dg.AssetCheckSeverity.WARN,
        description=outcome.description,
        metadata=metadata,
    )


def json_safe(value: Any) -> Any:
    """`value` made of JSON's types only, so that reporting it cannot raise.

    Check examples are rows of the table (polars `to_dicts`): times and dates become ISO 8601 text,
    decimals their exact text, NaN and infinities "NaN", "Infinity" and "-Infinity" (JSON has no such
    numbers), bytes their UTF-8 text (undecodable bytes escaped), structs and lists are converted
    item by item, and anything else becomes its `str`.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _NON_FINITE[str(value)]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset | pl.Series):
        return [json_safe(item) for item in value]
    return str(value)  # Decimal (exact, including NaN and Infinity), timedelta, enums, ...


def figures_metadata(figures: ServiceFigures | None) -> dict[str, Any]:
    """The service's own figures, as the partition's metadata: its answers' cache and freshness, its lists'
    totals against the items listed, the price-history points it counted, the sports platforms' errors."""
    if figures is None:
        return {}
    shown = figures.meta.as_metadata()
    if len(figures.lists) == 1:  # a catalogue list
        shown["service_listing"] = {name: walked.as_json() for name, walked in figures.lists.items()}
    elif figures.lists:  # a walk per market: summed up
        walks = figures.lists.values()
        shown["service_listing"] = {"walks": len(walks), "listed": sum(w.listed for w in walks),
                                    "ended_by_server": sum(w.ended_by_server for w in walks),
                                    "with_total": sum(bool(w.totals) for w in walks)}
    if figures.platform_errors is not None:
        shown["service_platform_errors"] = figures.platform_errors
    if figures.price_answers:
        counted = [a.total_points for a in figures.price_answers if a.total_points is not None]
        shown["service_price_answers"] = {"answers": len(figures.price_answers),
                                          "points": sum(a.points for a in figures.price_answers),
                                          "total_points": sum(counted) if counted else None}
    return shown
