"""The lake on an object store (PMW_LAKE_URL=s3://...), against a real S3-protocol server on loopback (moto's): the
same files as a local lake, published whole or not at all, listed and read back; and a local lake exactly as it
always was when PMW_LAKE_URL is not set."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.config import ConfigError, Settings, lake_url
from pipeline.engine.lake import uploads
from pipeline.engine.lake.storage import LocalStore, ObjectStore, open_store
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.verify import verify_lake
from pipeline.engine.schema import TABLES, lake_tables
from pipeline.engine.warehouse.views import connect_read_only, ensure_raw_views
from tests.support.frames import DAY, rejects_frame, temp_files, trades_frame


@pytest.fixture
def s3_lake(s3_lake_url: str, tmp_path: Path) -> Lake:
    return Lake.of(Settings(data_dir=tmp_path / "data", lake_url=s3_lake_url), keep_versions=2)


def _objects(lake: Lake) -> list[str]:
    """Every object of the lake, by key."""
    assert isinstance(lake.store, ObjectStore)
    return sorted(found.removeprefix(f"{lake.store.root}/") for found in lake.store.fs.find(lake.store.root))


def test_a_partition_lands_as_the_local_lake_writes_it_byte_for_byte_and_reads_back(s3_lake: Lake,
                                                                                     tmp_path: Path) -> None:
    rows, rejects = trades_frame("kalshi", DAY, 300), rejects_frame(2)
    local = Lake(tmp_path / "local")
    landed = s3_lake.write_partition("trades", "kalshi", DAY, rows, rejects)
    local.write_partition("trades", "kalshi", DAY, rows, rejects)
    key = "trades/platform=kalshi/date=2026-11-20/data.parquet"
    assert landed.path == f"{s3_lake.url}/{key}" and landed.path.startswith("s3://")
    assert isinstance(s3_lake.store, ObjectStore)
    assert s3_lake.store.fs.cat_file(f"{s3_lake.store.root}/{key}") == (local.root / key).read_bytes()
    assert _objects(s3_lake) == [f"_rejects/trades/platform=kalshi/date={DAY}/rejects.parquet", key]
    assert_frame_equal(s3_lake.read_partition("trades", "kalshi", DAY), local.read_partition("trades", "kalshi", DAY))
    assert pl.concat(s3_lake.read_partition_batches("trades", "kalshi", DAY)).height == 300
    assert s3_lake.partitions("trades") == [("kalshi", DAY)] and s3_lake.partitions("markets") == []
    assert (s3_lake.row_count("trades", "kalshi", DAY), s3_lake.rejects_count("trades", "kalshi", DAY)) == (300, 2)
    assert_frame_equal(s3_lake.read_rejects("trades", "kalshi", DAY), rejects)
    assert s3_lake.is_readable("trades", "kalshi", DAY)
    assert not s3_lake.is_readable("trades", "kalshi", date(2026, 1, 1))
    assert s3_lake.read_partition("trades", "polymarket", DAY) is None
    assert s3_lake.unreadable("trades") == []
    assert [problem for _, problem in verify_lake(s3_lake)] == [None, None]
    s3_lake.write_partition("trades", "kalshi", DAY, rows)  # a rerun without rejects leaves none behind
    assert s3_lake.rejects_count("trades", "kalshi", DAY) == 0
    assert not temp_files(s3_lake), "the local temporaries are gone once published"


def test_a_write_that_fails_midway_or_is_refused_leaves_the_previous_object(s3_lake: Lake) -> None:
    before = trades_frame("kalshi", DAY, 100)
    s3_lake.write_partition("trades", "kalshi", DAY, before)
    assert isinstance(s3_lake.store, ObjectStore)
    key = "trades/platform=kalshi/date=2026-11-20/data.parquet"
    stamp = s3_lake.store.stamp(key)

    def failing() -> Iterator[pl.DataFrame]:
        yield trades_frame("kalshi", DAY, 50, seed=1)
        raise ConnectionError("the source went away")

    with pytest.raises(ConnectionError):
        s3_lake.write_partition_batches("trades", "kalshi", DAY, failing())

    def refuse(_before: int | None, _rows: int, _rejects: pl.DataFrame | None) -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        s3_lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 10, seed=2), approve=refuse)
    assert s3_lake.store.stamp(key) == stamp
    assert_frame_equal(s3_lake.read_partition("trades", "kalshi", DAY), before.sort(TABLES["trades"].sort_key))
    assert _objects(s3_lake) == [key] and not temp_files(s3_lake)


def test_versions_are_kept_and_restored_on_the_object_store(s3_lake: Lake) -> None:
    for n in (10, 20, 30):
        s3_lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, n, seed=n), rejects_frame(1))
    kept = s3_lake.versions("trades", "kalshi", DAY)
    assert [version.rows for version in kept] == [20, 10]  # keep_versions=2, newest first
    assert str(kept[0].directory).startswith(f"{s3_lake.url}/_versions/trades/platform=kalshi/date=2026-11-20/")
    s3_lake.restore("trades", "kalshi", DAY)
    assert s3_lake.row_count("trades", "kalshi", DAY) == 20
    assert s3_lake.rejects_count("trades", "kalshi", DAY) == 1
    assert [version.rows for version in s3_lake.versions("trades", "kalshi", DAY)][:1] == [30]


def test_rounds_each_land_as_an_object_of_their_own(s3_lake: Lake) -> None:
    spec = lake_tables()["orderbook_snapshots"]
    assert spec.time_column is not None
    first, second = datetime(2026, 11, 20, 10, tzinfo=UTC), datetime(2026, 11, 20, 11, tzinfo=UTC)
    for round_at in (first, second, first):  # the retry of a round replaces its own object only
        values = {"platform": "kalshi", "date": DAY, spec.time_column: round_at}
        rows = pl.DataFrame({name: [values.get(name)] * 3 for name in spec.polars_schema}, schema=spec.polars_schema)
        s3_lake.write_round("orderbook_snapshots", "kalshi", DAY, round_at, rows)
    assert [str(path).rsplit("/", 1)[1] for path in s3_lake.round_files("orderbook_snapshots", "kalshi", DAY)] == [
        "round-20261120T100000Z.parquet", "round-20261120T110000Z.parquet"]
    assert s3_lake.row_count("orderbook_snapshots", "kalshi", DAY) == 6
    assert s3_lake.partitions("orderbook_snapshots") == [("kalshi", DAY)]


def test_the_warehouse_views_read_the_object_store(s3_lake: Lake, tmp_path: Path) -> None:
    s3_lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 40))
    s3_lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 2))
    warehouse = tmp_path / "warehouse.duckdb"
    ensure_raw_views(warehouse, s3_lake)
    with connect_read_only(warehouse, s3_lake) as connection:
        counts = connection.sql("SELECT platform, count(*) FROM raw.trades GROUP BY ALL ORDER BY 1").fetchall()
        assert counts == [("kalshi", 40), ("polymarket", 2)]
        assert connection.sql("SELECT count(*) FROM raw.markets").fetchall() == [(0,)]


def test_without_pmw_lake_url_the_lake_is_the_data_dirs_folder_as_always(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings.from_env({"PMW_DATA_DIR": str(data)})
    lake = Lake.of(settings, settings.keep_versions)
    assert settings.lake_url is None and isinstance(lake.store, LocalStore)
    assert lake.root == (data / "lake").resolve() and lake.url == str((data / "lake").resolve())
    rows, rejects = trades_frame("kalshi", DAY, 30), rejects_frame(1)
    lake.write_partition("trades", "kalshi", DAY, rows, rejects)
    lake.write_partition("trades", "kalshi", DAY, rows)
    found = sorted(str(path.relative_to(data)) for path in data.rglob("*") if path.is_file())
    version = lake.versions("trades", "kalshi", DAY)[0].stamp
    assert found == [
        f"lake/_versions/trades/platform=kalshi/date=2026-11-20/{version}/data.parquet",
        f"lake/_versions/trades/platform=kalshi/date=2026-11-20/{version}/rejects.parquet",
        "lake/trades/platform=kalshi/date=2026-11-20/data.parquet",
    ]
    reference = Lake(tmp_path / "reference")
    reference.write_partition("trades", "kalshi", DAY, rows)
    key = "trades/platform=kalshi/date=2026-11-20/data.parquet"
    assert (lake.root / key).read_bytes() == (reference.root / key).read_bytes()
    assert lake.glob("trades") == f"{lake.root}/trades/platform=*/date=*/*.parquet"
    assert isinstance(open_store(f"file://{tmp_path}/elsewhere", data), LocalStore)


@pytest.mark.parametrize("value", ["s3:/bucket", "s3:///bucket", "ftp://host/lake", "file://relative/lake", "lake"])
def test_a_lake_url_the_pipeline_cannot_use_is_refused_by_name(value: str) -> None:
    with pytest.raises(ConfigError, match="PMW_LAKE_URL must be"):
        lake_url({"PMW_LAKE_URL": value})
    assert lake_url({"PMW_LAKE_URL": "s3://bucket/prefix/"}) == "s3://bucket/prefix"
    assert lake_url({}) is None


def _open_uploads(lake: Lake) -> list[str]:
    assert isinstance(lake.store, ObjectStore)
    bucket = lake.store.root.split("/", 1)[0]
    return sorted(u["Key"] for u in lake.store.fs.call_s3("list_multipart_uploads", Bucket=bucket).get("Uploads", []))


def test_a_multipart_upload_a_killed_writer_left_open_is_aborted_at_the_next_write(
        s3_lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(s3_lake.store, ObjectStore)
    bucket, prefix = s3_lake.store.root.split("/", 1)
    for key in (f"{prefix}/trades/platform=kalshi/date={DAY}/data.parquet", "elsewhere/data.parquet"):
        s3_lake.store.fs.call_s3("create_multipart_upload", Bucket=bucket, Key=key)  # as a killed upload leaves it
    assert len(_open_uploads(s3_lake)) == 2
    monkeypatch.setattr(uploads, "STALE_UPLOAD_S", 0.0)  # every open upload is old enough to be a dead writer's
    s3_lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 3))
    assert _open_uploads(s3_lake) == ["elsewhere/data.parquet"], "the lake's own aborted; nothing outside it"
