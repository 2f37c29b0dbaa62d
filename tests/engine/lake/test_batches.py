"""Lake.write_partition_batches: a partition written batch by batch, as sorted and as atomic as a whole one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.lake.parquet_files import ROW_GROUP_SIZE
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from tests.support.frames import DAY, rejects_frame, temp_files, trades_frame

SORT_KEY = list(TABLES["trades"].sort_key)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path / "lake")


def cut(frame: pl.DataFrame, sizes: list[int]) -> list[pl.DataFrame]:
    """The frame in consecutive slices of the given sizes (the last takes the rest)."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(frame.slice(start, size))
        start += size
    return [*pieces, frame.slice(start)]


def test_batches_land_as_one_sorted_file_in_full_row_groups(lake: Lake) -> None:
    rows = pl.concat([trades_frame("kalshi", DAY, 20_000, seed=seed) for seed in range(13)]).sort(SORT_KEY)
    batches = cut(rows, [1, 999, 150_000, 7, 40_000])
    landed = lake.write_partition_batches("trades", "kalshi", DAY, (b.reverse() for b in batches))
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), rows)
    assert landed.rows == rows.height == 260_000
    metadata = pq.ParquetFile(landed.path).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sizes == [ROW_GROUP_SIZE, ROW_GROUP_SIZE, rows.height - 2 * ROW_GROUP_SIZE]


def test_a_whole_frame_and_its_batches_write_the_same_rows(lake: Lake, tmp_path: Path) -> None:
    rows = trades_frame("polymarket", DAY, 3_000)
    whole = lake.write_partition("trades", "polymarket", DAY, rows)
    other = Lake(tmp_path / "other")
    streamed = other.write_partition_batches("trades", "polymarket", DAY, cut(rows.sort(SORT_KEY), [500, 1_000]))
    assert_frame_equal(pl.read_parquet(streamed.path), pl.read_parquet(whole.path))
    assert pq.read_schema(streamed.path) == pq.read_schema(whole.path)


def test_a_batch_starting_before_the_previous_one_ended_is_refused_and_nothing_changes(lake: Lake) -> None:
    previous = trades_frame("kalshi", DAY, 40, seed=9)
    lake.write_partition("trades", "kalshi", DAY, previous, rejects_frame(1))
    rows = trades_frame("kalshi", DAY, 1_000).sort(SORT_KEY)
    with pytest.raises(ValueError, match="batches must follow each other in sort-key order"):
        lake.write_partition_batches("trades", "kalshi", DAY, cut(rows, [600])[::-1])
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), previous.sort(SORT_KEY))
    assert_frame_equal(lake.read_rejects("trades", "kalshi", DAY), rejects_frame(1))
    assert temp_files(lake) == []


def test_a_source_failing_midway_leaves_the_previous_partition_intact(lake: Lake) -> None:
    previous = trades_frame("kalshi", DAY, 40)
    lake.write_partition("trades", "kalshi", DAY, previous)

    def failing() -> Iterator[pl.DataFrame]:
        yield trades_frame("kalshi", DAY, ROW_GROUP_SIZE + 10, seed=2).sort(SORT_KEY)
        raise ConnectionError("the source went away")

    with pytest.raises(ConnectionError, match="went away"):
        lake.write_partition_batches("trades", "kalshi", DAY, failing())
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), previous.sort(SORT_KEY))
    assert temp_files(lake) == []


def test_a_batch_of_another_partition_is_refused(lake: Lake) -> None:
    with pytest.raises(ValueError, match="not in partition"):
        lake.write_partition_batches("trades", "kalshi", DAY, [trades_frame("polymarket", DAY, 5)])
    assert lake.partitions("trades") == []


def test_rejects_are_asked_for_once_the_batches_are_exhausted(lake: Lake) -> None:
    seen: list[str] = []

    def batches() -> Iterator[pl.DataFrame]:
        seen.append("batch")
        yield trades_frame("kalshi", DAY, 10)

    def rejects() -> pl.DataFrame:
        seen.append("rejects")
        return rejects_frame(3)

    landed = lake.write_partition_batches("trades", "kalshi", DAY, batches(), rejects)
    assert seen == ["batch", "rejects"]
    assert landed.rejects == 3
    assert_frame_equal(lake.read_rejects("trades", "kalshi", DAY), rejects_frame(3))


def test_no_batches_land_an_empty_partition_with_the_schema(lake: Lake) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 10), rejects_frame(2))
    landed = lake.write_partition_batches("trades", "kalshi", DAY, [])
    read = lake.read_partition("trades", "kalshi", DAY)
    assert (landed.rows, landed.rejects, read.height) == (0, 0, 0)
    assert read.schema == TABLES["trades"].polars_schema
    assert lake.read_rejects("trades", "kalshi", DAY) is None
