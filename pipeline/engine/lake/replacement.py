"""When a new version of a partition may replace the lake's: never by less without a reason.

A rerun whose source answers 200 with empty lists (an outage page), lost part of a day, or whose records are all
rejected would otherwise land less over a good partition and exit 0. The rule, applied by the lake just before the
new files are renamed onto the old ones (`Lake.write_partition_batches(approve=...)`), refuses:

- a partition whose records were rejected beyond ``max_reject_share`` (PMW_MAX_REJECT_SHARE, default 0.5;
  conflicting repeats are not counted: their id has landed, in the version met first);
- a rerun that would leave a landed partition empty, or with fewer rows than it held by more than
  ``shrink_tolerance`` of them (PMW_SHRINK_TOLERANCE, default 0.05), unless shrinking is allowed for a deliberate
  correction (`pmw backfill --allow-shrink`, PMW_ALLOW_SHRINK=1, a run tagged pmw/allow_shrink=true); a smaller
  shrink lands and the `rows_kept` check (pipeline.engine.reconciliation) reports it as a warning;

and `refuse_empty_listing` refuses an empty markets listing for a platform whose markets the lake holds (this
day's or another's). A refusal raises `PartitionRefused` naming the partition and the counts; the previous files stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import polars as pl

from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.writes import Approve
from pipeline.engine.normalized import CONFLICTING_REPEAT
from pipeline.engine.reconciliation import shrink_percent

ALLOW_SHRINK_TAG = "pmw/allow_shrink"  # a Dagster run's tag that lets its partitions shrink (`true`)


class PartitionRefused(Exception):
    """A new version of a partition that must not replace the lake's; the lake keeps the previous one."""


@dataclass(frozen=True)
class ReplacementRule:
    shrink_tolerance: float = 0.05  # the share of a landed partition's rows a rerun may lose
    max_reject_share: float = 0.5  # the share of a partition's records that may be rejected
    allow_shrink: bool = False  # a deliberate correction: any shrink, to empty included, is allowed

    @classmethod
    def of(cls, settings: Settings, allow_shrink: bool = False) -> ReplacementRule:
        """The rule of `settings`; `allow_shrink` (a run's tag) allows shrinking as PMW_ALLOW_SHRINK=1 does."""
        return cls(settings.shrink_tolerance, settings.max_reject_share, settings.allow_shrink or allow_shrink)

    def approver(self, table: str, platform: str, day: date) -> Approve:
        """The check that `Lake.write_partition_batches` calls before it publishes this partition."""
        return lambda before, rows, rejects: self.judge(f"{table} {platform} {day}", before, rows, rejects)

    def judge(self, partition: str, before: int | None, rows: int, rejects: pl.DataFrame | None) -> None:
        if rejects is not None:
            rejects = rejects.filter(pl.col("reason") != CONFLICTING_REPEAT)
        rejected = 0 if rejects is None else rejects.height
        records = rows + rejected
        if rejects is not None and rejected > self.max_reject_share * records:
            reason = rejects["reason"].mode().sort().first()
            raise PartitionRefused(
                f"{partition}: {rejected} of {records} records were rejected, more than PMW_MAX_REJECT_SHARE="
                f"{self.max_reject_share:g} of them (most often: {reason}); the partition was not replaced"
            )
        if self.allow_shrink or not before:
            return
        if rows == 0 or rows < (1 - self.shrink_tolerance) * before:
            raise PartitionRefused(
                f"{partition}: a rerun would replace {before} rows with {rows} ({shrink_percent(before, rows)}), "
                f"past PMW_SHRINK_TOLERANCE={self.shrink_tolerance:g}; the previous partition is kept "
                f"(`pmw backfill --allow-shrink`, or the run tag {ALLOW_SHRINK_TAG}=true, lands it)"
            )

    def refuse_empty_listing(self, lake: Lake, platform: str, day: date, listed: int) -> None:
        """Refuse a markets listing that came back empty while the lake holds markets of the platform, this day's
        or the nearest other day's: real platforms always have markets live, so it is an outage or an empty
        environment."""
        if listed or self.allow_shrink:
            return
        landed = sorted((abs((other - day).days), other) for p, other in lake.partitions("markets")
                        if p == platform)
        for _, other in landed:
            count = lake.row_count("markets", platform, other)
            if count:
                raise PartitionRefused(
                    f"markets {platform} {day}: the markets listing came back empty, but the lake holds {count} "
                    f"markets of {platform} on {other}: an outage, or an API URL pointing at an empty "
                    "environment? Nothing was landed (`pmw backfill --allow-shrink` lands the empty day)"
                )
