"""The replacement rule: when a new version of a partition may replace the lake's."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import pytest

from pipeline.engine.config import Settings
from pipeline.engine.lake.replacement import PartitionRefused, ReplacementRule
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import REJECTS_SCHEMA
from tests.support.frames import trades_frame

DAY = date(2026, 11, 20)
RULE = ReplacementRule(shrink_tolerance=0.5, max_reject_share=0.5)


def _rejects(reasons: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"raw": ["{}"] * len(reasons), "reason": reasons, "_fetched_at": [None] * len(reasons)},
                        schema=REJECTS_SCHEMA)


@pytest.mark.parametrize(("before", "rows"), [(None, 0), (0, 0), (100, 100), (100, 50), (100, 120)])
def test_a_new_partition_or_one_losing_at_most_the_allowed_share_is_approved(before: int | None, rows: int) -> None:
    RULE.judge("trades kalshi 2026-11-20", before, rows, None)


@pytest.mark.parametrize(("before", "rows", "said"), [
    (100, 0, r"would replace 100 rows with 0 \(-100.0 %\), past PMW_SHRINK_TOLERANCE=0.5"),
    (100, 49, r"would replace 100 rows with 49 \(-51.0 %\), past PMW_SHRINK_TOLERANCE=0.5"),
])
def test_a_rerun_shrinking_past_the_limit_is_refused_naming_the_counts(before: int, rows: int, said: str) -> None:
    with pytest.raises(PartitionRefused, match="trades kalshi 2026-11-20: a rerun " + said):
        RULE.judge("trades kalshi 2026-11-20", before, rows, None)
    ReplacementRule(allow_shrink=True).judge("trades kalshi 2026-11-20", before, rows, None)


def test_by_default_a_rerun_that_lost_46_percent_of_the_day_is_refused_and_one_within_a_few_percent_lands() -> None:
    rule = ReplacementRule.of(Settings())
    with pytest.raises(PartitionRefused, match=(
            r"^trades kalshi 2026-11-20: a rerun would replace 1000 rows with 540 \(-46.0 %\), past "
            r"PMW_SHRINK_TOLERANCE=0.05; the previous partition is kept \(`pmw backfill --allow-shrink`, or the run "
            r"tag pmw/allow_shrink=true, lands it\)$")):
        rule.judge("trades kalshi 2026-11-20", 1000, 540, None)
    rule.judge("trades kalshi 2026-11-20", 1000, 951, None)  # within the tolerance: lands, the WARN check says so


def test_rejects_beyond_the_share_are_refused_naming_the_commonest_reason() -> None:
    RULE.judge("trades kalshi 2026-11-20", None, 2, _rejects(["price: not a number"] * 2))
    with pytest.raises(PartitionRefused, match=r"3 of 5 records were rejected, more than PMW_MAX_REJECT_SHARE=0.5 "
                                               r"of them \(most often: price: not a number\)"):
        RULE.judge("trades kalshi 2026-11-20", None, 2, _rejects(["price: not a number"] * 2 + ["size: missing"]))
    with pytest.raises(PartitionRefused, match="1 of 1 records were rejected"):  # allow_shrink is about rows
        ReplacementRule(allow_shrink=True).judge("trades kalshi 2026-11-20", None, 0, _rejects(["id: missing"]))


def test_a_refused_write_leaves_the_previous_partition_and_no_temporary_file(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    rows = trades_frame("kalshi", DAY, 3)
    lake.write_partition("trades", "kalshi", DAY, rows)
    path = lake.partition_path("trades", "kalshi", DAY)
    before = path.read_bytes()

    with pytest.raises(PartitionRefused):
        lake.write_partition("trades", "kalshi", DAY, rows.head(0), approve=RULE.approver("trades", "kalshi", DAY))

    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert lake.row_count("trades", "kalshi", DAY) == 3


def test_row_count_reads_the_footer_and_is_none_without_a_readable_file(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    assert lake.row_count("trades", "kalshi", DAY) is None
    path = lake.partition_path("trades", "kalshi", DAY)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not parquet")
    assert lake.row_count("trades", "kalshi", DAY) is None
