"""What the unified API says about its own answers, kept for the reconciliation checks and the metadata.

The service's answers carry figures about themselves: a list's `pagination.total`, price history's
`meta.total_points` and `meta.time_range`, and every list's `meta.cache_hit` and `meta.data_freshness`. The
source gathers them as it reads (a page at a time, never a record at a time), and the assets hold them against
what landed (`pipeline.engine.reconciliation`) and keep them in the partition's metadata. Gathering them costs
no request: they come with the answers the partition needs anyway.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl


@dataclass
class ListFigures:
    """One list walked by its cursor: the totals its pages gave, the distinct items it brought, and whether the
    server itself said it was done (not a stop rule of the pipeline's)."""

    totals: list[int] = field(default_factory=list)  # each distinct `pagination.total` given, in order
    listed: int = 0  # items kept (each identity once)
    ended_by_server: bool = False

    def page(self, body: Any, kept: int) -> None:
        """Count one page: its body (its pagination read) and how many of its items were new."""
        self.listed += kept
        pagination = body.get("pagination") if isinstance(body, dict) else None
        if not isinstance(pagination, dict):
            return
        total = pagination.get("total")
        if type(total) is int and total not in self.totals:
            self.totals.append(total)
        self.ended_by_server = not (pagination.get("has_more") and pagination.get("next_cursor"))

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ListFigures:
        return cls(list(data.get("totals", [])), int(data.get("listed", 0)), bool(data.get("ended_by_server")))


@dataclass(frozen=True)
class PriceAnswer:
    """One price-history answer the partition's rows come from: what was asked, what `meta` said, what came."""

    markets: tuple[str, ...]
    start: int  # asked, Unix seconds
    end: int
    points: int  # items of `data`
    total_points: int | None  # meta.total_points, when given as a number
    range_start: int | None  # meta.time_range, when given as numbers
    range_end: int | None


@dataclass
class AnswerMeta:
    """`meta.cache_hit` and `meta.data_freshness` over a partition's answers."""

    cache_hits: int = 0
    cache_misses: int = 0
    freshness: set[str] = field(default_factory=set)

    def read(self, body: Any) -> None:
        meta = body.get("meta") if isinstance(body, dict) else None
        if not isinstance(meta, dict):
            return
        hit = meta.get("cache_hit")
        if type(hit) is bool:
            self.cache_hits += hit
            self.cache_misses += not hit
        fresh = meta.get("data_freshness")
        if isinstance(fresh, str):
            self.freshness.add(fresh)

    def merge(self, other: AnswerMeta) -> None:
        self.cache_hits += other.cache_hits
        self.cache_misses += other.cache_misses
        self.freshness |= other.freshness

    def as_metadata(self) -> dict[str, Any]:
        """What the answers said about themselves, for the partition's metadata (nothing when they said nothing)."""
        shown: dict[str, Any] = {}
        if self.cache_hits or self.cache_misses:
            shown["service_cache_hits"] = {"hit": self.cache_hits, "miss": self.cache_misses}
        if self.freshness:
            ordered = sorted(self.freshness)  # ISO texts of one form sort in time; both ends shown as sent
            shown["service_data_freshness"] = {"oldest": ordered[0], "newest": ordered[-1], "values": len(ordered)}
        return shown

    def as_json(self) -> dict[str, Any]:
        return {"cache_hits": self.cache_hits, "cache_misses": self.cache_misses, "freshness": sorted(self.freshness)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnswerMeta:
        return cls(int(data.get("cache_hits", 0)), int(data.get("cache_misses", 0)), set(data.get("freshness", [])))


@dataclass
class ServiceFigures:
    """The figures behind one partition: the lists walked (by name: `markets`, `events`, `series`), the
    price-history answers, the catalogue's markets per event (`listed_per_event`: `event_id` as the markets
    carry it, `listed` markets), and the answers' meta (for the sports tables, their platforms' errors too)."""

    lists: dict[str, ListFigures] = field(default_factory=dict)
    price_answers: list[PriceAnswer] = field(default_factory=list)
    listed_per_event: pl.DataFrame | None = None
    meta: AnswerMeta = field(default_factory=AnswerMeta)
    platform_errors: dict[str, str] | None = None  # the sports answers' `meta.platform_errors`: platform -> error

    def read_platform_errors(self, body: Any) -> None:
        """Add a sports answer's `meta.platform_errors` (an object of platform -> error, or a list of errors)."""
        meta = body.get("meta") if isinstance(body, dict) else None
        errors = meta.get("platform_errors") if isinstance(meta, dict) else None
        if errors is None:
            return
        self.platform_errors = self.platform_errors or {}
        if isinstance(errors, dict):
            self.platform_errors.update({str(name): str(error) for name, error in errors.items()})
        elif isinstance(errors, list):
            self.platform_errors.update({_platform_of(error, n): str(error) for n, error in enumerate(errors)})


def _platform_of(error: Any, place: int) -> str:
    """The platform a listed error names (`platform`), else its place in the list."""
    named = error.get("platform") if isinstance(error, dict) else None
    return str(named) if named is not None else f"#{place}"
