"""The Parquet lake: layout, file format, validation of inputs, and atomic replacement of partitions."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.lake.parquet_files import ROW_GROUP_SIZE, _leaf_columns
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES, Platform
from tests.support.frames import (
    DAY,
    rejects_frame,
    sample_frame,
    temp_files,
    trades_frame,
)
from tests.support.paths import REPO_ROOT


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path / "lake")


@pytest.mark.parametrize("table", sorted(TABLES))
def test_round_trip_gives_back_the_rows_in_sort_order(lake: Lake, table: str) -> None:
    rows = sample_frame(table, "kalshi", DAY)
    landed = lake.write_partition(table, "kalshi", DAY, rows)
    read = lake.read_partition(table, "kalshi", DAY)
    assert read is not None
    assert read.schema == TABLES[table].polars_schema
    assert_frame_equal(read, rows.sort(TABLES[table].sort_key))
    assert landed.path == lake.root / table / "platform=kalshi" / "date=2026-11-20" / "data.parquet"
    assert (landed.table, landed.platform, landed.day, landed.rows, landed.rejects) == (table, "kalshi", DAY, 3, 0)
    assert landed.bytes_written == landed.path.stat().st_size


def test_partition_columns_live_in_the_path_only(lake: Lake) -> None:
    landed = lake.write_partition("trades", Platform.POLYMARKET, DAY, trades_frame("polymarket", DAY, 10))
    assert type(landed.platform) is str
    assert landed.path.parent.parent.name == "platform=polymarket"
    stored = pq.read_schema(landed.path).names
    assert "platform" not in stored
    assert "date" not in stored
    assert stored == [c for c in TABLES["trades"].column_names if c not in ("platform", "date")]


def test_file_rows_are_sorted_by_the_sort_key(lake: Lake) -> None:
    rows = trades_frame("kalshi", DAY, 500)
    landed = lake.write_partition("trades", "kalshi", DAY, rows)
    stored = pl.read_parquet(landed.path)
    assert TABLES["trades"].sort_key == ("market_id", "timestamp", "trade_id")
    assert_frame_equal(stored, stored.sort(TABLES["trades"].sort_key))
    assert stored.height == rows.height


def test_files_have_row_groups_statistics_and_the_measured_encodings(lake: Lake) -> None:
    rows = pl.concat([trades_frame("kalshi", DAY, 1_000)] * (2 * ROW_GROUP_SIZE // 1_000 + 2)).head(
        2 * ROW_GROUP_SIZE + 1_000
    )
    metadata = pq.ParquetFile(lake.write_partition("trades", "kalshi", DAY, rows).path).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [
        ROW_GROUP_SIZE,
        ROW_GROUP_SIZE,
        1_000,
    ]
    for group in map(metadata.row_group, range(metadata.num_row_groups)):
        chunks = {chunk.path_in_schema: chunk for chunk in map(group.column, range(group.num_columns))}
        # Floats and timestamps are stored uncompressed, every other column zstd; floats are dictionary-encoded.
        numbers = {"price", "size", "timestamp", "_fetched_at"}
        assert {path for path, chunk in chunks.items() if chunk.compression == "UNCOMPRESSED"} == numbers
        assert {chunks[path].compression for path in chunks.keys() - numbers} == {"ZSTD"}
        assert chunks["price"].has_dictionary_page
        # Every column has a page index, so that a reader skips the pages a filter rules out.
        assert all(chunk.has_column_index and chunk.has_offset_index for chunk in chunks.values())
        # Timestamps are delta-encoded, without a dictionary; strings keep theirs.
        for timestamp in ("timestamp", "_fetched_at"):
            assert "DELTA_BINARY_PACKED" in chunks[timestamp].encodings
            assert not chunks[timestamp].has_dictionary_page
        assert chunks["market_id"].has_dictionary_page
        assert chunks["user.name"].has_dictionary_page
        assert all(chunk.statistics is not None for chunk in chunks.values())
        assert all(chunks[path].statistics.has_min_max for path in ("market_id", "price", "size", "timestamp"))
    market_ids = metadata.row_group(0).column(metadata.schema.names.index("market_id")).statistics
    assert market_ids.min == "m0"


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_leaf_column_of_every_table_gets_the_writer_options(lake: Lake, table: str) -> None:
    # pyarrow gives a leaf column left out of the per-column options no compression and no dictionary:
    # writer_options must name every leaf (struct fields, list elements) exactly as the file does.
    metadata = pq.ParquetFile(lake.write_partition(table, "kalshi", DAY, sample_frame(table, "kalshi", DAY)).path)
    group = metadata.metadata.row_group(0)
    arrow = metadata.schema_arrow
    timestamps = {path for path, dtype in _leaves(arrow) if pa.types.is_timestamp(dtype)}
    floats = {path for path, dtype in _leaves(arrow) if pa.types.is_floating(dtype)}
    assert [path for path, _ in _leaves(arrow)] == [group.column(i).path_in_schema for i in range(group.num_columns)]
    for chunk in map(group.column, range(group.num_columns)):
        path = chunk.path_in_schema
        assert chunk.compression == ("UNCOMPRESSED" if path in timestamps | floats else "ZSTD"), path
        assert chunk.has_column_index and chunk.has_offset_index, path
        assert ("DELTA_BINARY_PACKED" in chunk.encodings) == (path in timestamps), path
    assert timestamps  # every table has some


def _leaves(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    return [leaf for field in schema for leaf in _leaf_columns(field.name, field.type)]


def _drop_price(f: pl.DataFrame) -> pl.DataFrame:
    return f.drop("price")


def _extra_column(f: pl.DataFrame) -> pl.DataFrame:
    return f.with_columns(pl.lit(1).alias("extra"))


def _swapped(f: pl.DataFrame) -> pl.DataFrame:
    names = list(f.columns)
    i, j = names.index("price"), names.index("size")
    names[i], names[j] = names[j], names[i]
    return f.select(names)


def _price_as_text(f: pl.DataFrame) -> pl.DataFrame:
    return f.with_columns(pl.col("price").cast(pl.String))


def _naive_timestamp(f: pl.DataFrame) -> pl.DataFrame:
    return f.with_columns(pl.col("timestamp").dt.replace_time_zone(None))


def _nested_field_type(f: pl.DataFrame) -> pl.DataFrame:
    return f.with_columns(pl.col("user").struct.rename_fields(["name", "alias", "profile_image"]))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_drop_price, r"table trades: missing columns \['price'\]"),
        (_extra_column, r"table trades: .*unexpected columns \['extra'\]"),
        (_swapped, r"table trades: column 'size' is out of order: expected 'price'"),
        (_price_as_text, r"table trades: column 'price' expected type Float64, got String"),
        (_naive_timestamp, r"table trades: column 'timestamp' expected type Datetime\(.*UTC.*\), got Datetime"),
        (_nested_field_type, r"table trades: column 'user' expected type Struct"),
    ],
)
def test_wrong_schema_is_refused_and_never_written(lake: Lake, mutate, message: str) -> None:
    previous = trades_frame("kalshi", DAY, 5)
    lake.write_partition("trades", "kalshi", DAY, previous)
    with pytest.raises(ValueError, match=message):
        lake.write_partition("trades", "kalshi", DAY, mutate(trades_frame("kalshi", DAY, 8, seed=1)))
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), previous.sort(TABLES["trades"].sort_key))


def test_wrong_rejects_schema_is_refused(lake: Lake) -> None:
    rejects = rejects_frame(2).rename({"reason": "why"})
    with pytest.raises(ValueError, match="rejects of table trades"):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 5), rejects)
    assert lake.read_partition("trades", "kalshi", DAY) is None


@pytest.mark.parametrize(
    "rows",
    [trades_frame("polymarket", DAY, 3), trades_frame("kalshi", DAY + timedelta(days=1), 3)],
    ids=["other-platform", "other-day"],
)
def test_rows_of_another_partition_are_refused(lake: Lake, rows: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="3 of 3 rows are not in partition platform=kalshi date=2026-11-20"):
        lake.write_partition("trades", "kalshi", DAY, rows)


@pytest.mark.parametrize(
    ("table", "platform", "day", "message"),
    [
        ("../x", "kalshi", DAY, r"unknown table '\.\./x'"),
        ("trades/../../x", "kalshi", DAY, "unknown table"),
        ("TRADES", "kalshi", DAY, "unknown table"),
        ("trades", "kalshi/../../etc", DAY, r"unknown platform 'kalshi/\.\./\.\./etc': expected one of \['polymarket'"),
        ("trades", "polymarket;DROP", DAY, "unknown platform 'polymarket;DROP'"),
        ("trades", "manifold", DAY, "unknown platform 'manifold'"),
        ("trades", "kalshi", "2026-11-20", "invalid day '2026-11-20': expected a datetime.date"),
        ("trades", "kalshi", datetime(2026, 11, 20, tzinfo=UTC), "invalid day datetime"),
        ("trades", "kalshi", "../../etc", "invalid day"),
    ],
)
def test_hostile_identifiers_are_refused(lake: Lake, table, platform, day, message: str) -> None:
    rows = trades_frame("kalshi", DAY, 2)
    for call in (
        lambda: lake.partition_path(table, platform, day),
        lambda: lake.write_partition(table, platform, day, rows),
        lambda: lake.read_partition(table, platform, day),
        lambda: lake.read_rejects(table, platform, day),
    ):
        with pytest.raises(ValueError, match=message):
            call()
    assert not lake.root.exists()


def test_partitions_glob_refuses_unknown_table(lake: Lake) -> None:
    for call in (lambda: lake.partitions("../trades"), lambda: lake.glob("*")):
        with pytest.raises(ValueError, match="unknown table"):
            call()


def test_a_partition_path_escaping_the_root_through_a_symlink_is_refused(lake: Lake, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    lake.root.mkdir()
    (lake.root / "trades").symlink_to(outside)
    with pytest.raises(ValueError, match="resolves outside the lake root"):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 2))
    assert list(outside.iterdir()) == []


def test_a_root_with_glob_characters_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="glob characters"):
        Lake(tmp_path / "lake[1]")


def test_rejects_are_stored_and_a_rewrite_without_rejects_removes_them(lake: Lake) -> None:
    rejects = rejects_frame(4)
    landed = lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 5), rejects)
    rejects_path = lake.root / "_rejects" / "trades" / "platform=kalshi" / "date=2026-11-20" / "rejects.parquet"
    assert landed.rejects == 4
    assert landed.bytes_written == landed.path.stat().st_size + rejects_path.stat().st_size
    assert_frame_equal(lake.read_rejects("trades", "kalshi", DAY), rejects)
    assert pq.read_schema(rejects_path).names == ["raw", "reason", "_fetched_at"]

    rewrite = lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 6, seed=1), rejects_frame(0))
    assert rewrite.rejects == 0
    assert lake.read_rejects("trades", "kalshi", DAY) is None
    assert not rejects_path.exists()


def test_a_rewrite_replaces_the_whole_partition_even_with_no_rows(lake: Lake) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 50))
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 0))
    read = lake.read_partition("trades", "kalshi", DAY)
    assert read is not None
    assert read.height == 0
    assert read.schema == TABLES["trades"].polars_schema


def test_partitions_lists_what_has_landed(lake: Lake) -> None:
    assert lake.partitions("trades") == []
    assert lake.read_partition("trades", "kalshi", DAY) is None
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 1))
    lake.write_partition(
        "trades", "polymarket", DAY - timedelta(days=1), trades_frame("polymarket", DAY - timedelta(days=1), 1)
    )
    for foreign in (
        "platform=manifold/date=2026-11-20",
        "platform=kalshi/date=20261120",
        "platform=kalshi/date=2026-11-21",
    ):
        (lake.root / "trades" / foreign).mkdir(parents=True)
    (lake.root / "trades" / "platform=manifold/date=2026-11-20/data.parquet").write_bytes(b"")
    assert lake.partitions("trades") == [("kalshi", DAY), ("polymarket", DAY - timedelta(days=1))]
    assert lake.partitions("markets") == []


def test_polars_reads_the_lake_glob_with_hive_partitioning(lake: Lake) -> None:
    first = trades_frame("kalshi", DAY, 20)
    second = trades_frame("polymarket", DAY + timedelta(days=1), 30, seed=2)
    lake.write_partition("trades", "kalshi", DAY, first)
    lake.write_partition("trades", "polymarket", DAY + timedelta(days=1), second)
    scanned = pl.scan_parquet(
        lake.glob("trades"), hive_partitioning=True, hive_schema={"platform": pl.String, "date": pl.Date}
    )
    read = scanned.select(TABLES["trades"].column_names).collect()
    assert read.schema == TABLES["trades"].polars_schema
    expected = pl.concat([first, second]).sort("trade_id")
    assert_frame_equal(read.sort("trade_id"), expected)


def test_a_reader_of_the_old_file_keeps_reading_it_while_a_new_one_lands(lake: Lake) -> None:
    old = trades_frame("kalshi", DAY, 300, price=0.25)
    path = lake.write_partition("trades", "kalshi", DAY, old).path
    with path.open("rb") as handle:
        opened = pq.ParquetFile(handle)
        new = trades_frame("kalshi", DAY, 200, seed=1, price=0.75)
        lake.write_partition("trades", "kalshi", DAY, new)
        still_old = pl.from_arrow(opened.read())
    assert still_old.height == 300
    assert still_old["price"].unique().to_list() == [0.25]
    assert lake.read_partition("trades", "kalshi", DAY)["price"].unique().to_list() == [0.75]


def test_concurrent_readers_see_one_whole_version_or_the_other(lake: Lake) -> None:
    """Each version has its own row count and a single price: a mix or a torn file would show."""
    sizes = {version: 100 + 37 * version for version in range(15)}
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, sizes[0], price=0.0))
    done = threading.Event()
    seen: list[tuple[int, list[float]]] = []
    errors: list[BaseException] = []

    def read_until_done() -> None:
        try:
            while not done.is_set():
                frame = lake.read_partition("trades", "kalshi", DAY)
                seen.append((frame.height, frame["price"].unique().to_list()))
        except BaseException as error:  # reported to the test thread below
            errors.append(error)

    reader = threading.Thread(target=read_until_done)
    reader.start()
    for version in range(1, 15):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, sizes[version], price=float(version)))
    done.set()
    reader.join()
    assert errors == []
    assert seen
    for height, prices in seen:
        assert len(prices) == 1
        assert height == sizes[int(prices[0])]
    assert len({prices[0] for _, prices in seen}) > 1, "the reader never overlapped a write"


def test_a_failed_rename_leaves_the_previous_partition_intact(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    previous = trades_frame("kalshi", DAY, 40)
    lake.write_partition("trades", "kalshi", DAY, previous, rejects_frame(2))

    def crash(source: object, target: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 90, seed=3))
    monkeypatch.undo()
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), previous.sort(TABLES["trades"].sort_key))
    assert_frame_equal(lake.read_rejects("trades", "kalshi", DAY), rejects_frame(2))
    assert temp_files(lake) == []


KILLED_WRITER = """
import os, sys, time
from datetime import date
from pathlib import Path
import polars as pl
from pipeline.engine.lake.store import Lake

def hang(fd):
    print("staged", flush=True)
    time.sleep(60)

lake = Lake(Path(sys.argv[1]))
day = date.fromisoformat(sys.argv[2])
rows = lake.read_partition("trades", "kalshi", day).with_columns(pl.col("price") + 1)
os.fsync = hang
lake.write_partition("trades", "kalshi", day, rows)
"""


def test_a_killed_writer_leaves_the_previous_partition_and_the_next_write_cleans_up(lake: Lake) -> None:
    previous = trades_frame("kalshi", DAY, 40)
    lake.write_partition("trades", "kalshi", DAY, previous)
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(lake.root), DAY.isoformat()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    try:
        assert writer.stdout.readline() == "staged\n", writer.stderr.read()
    finally:
        writer.kill()
        writer.communicate()
    assert [p.name.startswith(".data.parquet.") for p in temp_files(lake)] == [True]
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), previous.sort(TABLES["trades"].sort_key))
    assert lake.partitions("trades") == [("kalshi", DAY)]

    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 7, seed=4))
    assert temp_files(lake) == []
    assert lake.read_partition("trades", "kalshi", DAY).height == 7
