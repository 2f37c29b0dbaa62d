"""The times the APIs write, read in polars: ISO-8601 texts with a UTC offset and Unix times in seconds.

One reading for every stage: the normalizers' typed columns, the sources' liveness rule over raw records, the
spool's reject days.
"""

from __future__ import annotations

import polars as pl

from pipeline.engine.schema import UTC_TIMESTAMP

# `%#z` takes both `Z` and `+00:00`; polars 2.1 reads no `Z` with `%z`. A time without an offset is refused:
# its zone is unknown.
_ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%.f%#z"
# Unix times are documented in seconds (the unified API's trades and price points, Polymarket's `t` and
# `timestamp`, Kalshi's `end_period_ts`). Beyond 1e11 s (the year 5138) a number is no plausible time in seconds:
# up to 1e14 it reads as a time in milliseconds (1e11 ms is 1973), a unit no source documents, so it is refused
# with a reason saying so rather than rescaled without a word.
UNIX_SECONDS = (-1e11, 1e11)


def parse_iso(text: pl.Expr) -> pl.Expr:
    """The UTC time an ISO-8601 text with a UTC offset stands for; null when it cannot be read. Read
    case-insensitively: RFC 3339 (5.6) allows a lower-case `t` and `z` (`2026-11-20t00:00:00z`), which chrono's
    literal `T` and `%#z` refuse, and no other letter belongs in such a time."""
    return text.str.to_uppercase().str.to_datetime(_ISO_FORMAT, time_unit="us", time_zone="UTC", strict=False)


def parse_unix(number: pl.Expr) -> pl.Expr:
    """The UTC time a Unix time in seconds stands for; null when it is no plausible time in seconds (one in
    milliseconds included: see UNIX_SECONDS)."""
    micros = (number * 1e6).round()
    return pl.when(number.is_between(*UNIX_SECONDS)).then(micros).cast(pl.Int64).cast(UTC_TIMESTAMP)
