"""`pmw normalize`: normalize one saved raw response into Parquet, to see what a normalizer makes of it.

    pmw normalize --platform kalshi --entity markets [--source direct|api] INPUT.json -o OUT.parquet

INPUT.json is a bare response body or a `{"_metadata": {...}, "response": body}` recording; the entity's rows go to
OUT.parquet, other tables' beside it, rejects to OUT.rejects.parquet. It exits 0 when the response was read
(rejects included), 2 with a one-line message when it cannot be. docs/operating.md says the rest.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from pipeline.cli.common import arguments
from pipeline.cli.common.arguments import Subparsers
from pipeline.cli.common.failures import CommandError
from pipeline.engine.normalize.native import normalize_native
from pipeline.engine.normalize.unified import normalize
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import MARKET_PLATFORMS, TABLES, Source

# Where the records are in a unified-API response, per entity (docs/api-contract.md).
UNIFIED_ENVELOPE: dict[str, str] = {
    "series": "series",
    "events": "events",
    "markets": "markets",
    "trades": "trades",
    "price_history": "data",
}
_SHOWN_REASONS = 20


class InputError(CommandError):
    """The input cannot be normalized; the message says why, in one line (exit 2)."""


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "normalize",
        help="normalize a saved raw response into Parquet",
        description="Normalize a saved raw response (bare body, or a {_metadata, response} recording) into "
        "Parquet: OUT.parquet, plus OUT.rejects.parquet when records are rejected.",
    )
    parser.add_argument("--platform", required=True, choices=[p.value for p in MARKET_PLATFORMS])
    parser.add_argument("--entity", required=True, choices=list(TABLES), help="what the response lists")
    parser.add_argument(
        "--source",
        choices=[Source.DIRECT.value, Source.API.value],
        default=Source.DIRECT.value,
        help="direct: the platform's own API (default); api: the unified API",
    )
    parser.add_argument("input", type=Path, metavar="INPUT.json")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.parquet")
    parser.add_argument(
        "--context",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="what the request knew (repeatable): market_id, outcome_id, period_interval",
    )
    parser.add_argument("--day", type=arguments.day, default=None,
                        help="partition day (default: the fetch time's UTC day)")
    parser.add_argument(
        "--fetched-at",
        type=_moment,
        default=None,
        help="fetch time, ISO 8601 with offset (default: the recording's recorded_at, else now)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        body, metadata = _read(args.input)
        fetched_at = args.fetched_at or _recorded_at(metadata) or dt.datetime.now(dt.UTC)
        day = args.day or fetched_at.astimezone(dt.UTC).date()
        context = {**_scalars(metadata), **dict(args.context)}
        results = _normalized(args, body, day, fetched_at, context)
        _write(results, args.entity, args.output)
    except (ValueError, OSError) as error:  # a body of the wrong shape, a missing context value, an unwritable output
        raise CommandError(str(error)) from None
    return 0


def _read(path: Path) -> tuple[Any, dict[str, Any]]:
    """The response body, and the recording's metadata when the file is a `{_metadata, response}` recording."""
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    except orjson.JSONDecodeError as error:
        raise InputError(f"{path} is not valid JSON (truncated?): {error}") from None
    if isinstance(data, dict) and set(data) == {"_metadata", "response"} and isinstance(data["_metadata"], dict):
        return data["response"], data["_metadata"]
    return data, {}


def _recorded_at(metadata: Mapping[str, Any]) -> dt.datetime | None:
    recorded = metadata.get("recorded_at")
    if not isinstance(recorded, str):
        return None
    try:
        return _moment(recorded)
    except argparse.ArgumentTypeError as error:
        raise InputError(f"the recording's recorded_at: {error}") from None


def _scalars(metadata: Mapping[str, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in metadata.items() if isinstance(value, str | int | float)}


def _normalized(
    args: argparse.Namespace, body: Any, day: dt.date, fetched_at: dt.datetime, context: dict[str, str]
) -> dict[str, Normalized]:
    if args.source == Source.DIRECT.value:
        return normalize_native(args.platform, args.entity, body, day=day, fetched_at=fetched_at, context=context)
    records = _unified_records(body, args.entity)
    options = {"platform": args.platform, "day": day, "source": Source.API.value, "fetched_at": fetched_at}
    return {args.entity: normalize(args.entity, records, **options)}


def _unified_records(body: Any, entity: str) -> list[Any]:
    """The records of a unified-API response: the array under the entity's envelope key (or a bare array)."""
    key = UNIFIED_ENVELOPE[entity]
    if isinstance(body, dict) and isinstance(body.get(key), list):
        return body[key]
    if isinstance(body, list):
        return body
    raise InputError(f"expected a unified-API response with a {key!r} array, got {type(body).__name__}")


def _write(results: dict[str, Normalized], entity: str, output: Path) -> None:
    """Each table's rows and rejects beside OUT.parquet; the entity's table always, the others when not empty."""
    for table, result in results.items():
        if table != entity and result.rows.is_empty() and result.rejects.is_empty():
            continue
        rows_path, rejects_path = _paths(output, table, entity)
        rows_path.parent.mkdir(parents=True, exist_ok=True)
        result.rows.write_parquet(rows_path)
        print(f"{table}: {result.rows.height} row(s) -> {rows_path}")
        if result.rejects.is_empty():
            rejects_path.unlink(missing_ok=True)
            continue
        result.rejects.write_parquet(rejects_path)
        print(f"{table}: {result.rejects.height} reject(s) -> {rejects_path}")
        _print_reasons(result.rejects)


def _paths(output: Path, table: str, entity: str) -> tuple[Path, Path]:
    stem = output.name.removesuffix(".parquet")
    if table == entity:
        return output, output.with_name(f"{stem}.rejects.parquet")
    return output.with_name(f"{stem}.{table}.parquet"), output.with_name(f"{stem}.{table}.rejects.parquet")


def _print_reasons(rejects: pl.DataFrame) -> None:
    counts = rejects.group_by("reason", maintain_order=True).len()
    for reason, count in counts.head(_SHOWN_REASONS).iter_rows():
        print(f"  {count} x {reason}")
    if counts.height > _SHOWN_REASONS:
        print(f"  ... and {counts.height - _SHOWN_REASONS} other reason(s)")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _moment(text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time, got {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"expected a time with a UTC offset, got {text!r}")
    return moment
