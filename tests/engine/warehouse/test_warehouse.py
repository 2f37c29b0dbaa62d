"""The DuckDB warehouse: raw views over the lake, and runs that never fail because an analyst holds the file."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES, lake_tables
from pipeline.engine.warehouse.views import (
    RAW_SCHEMA,
    View,
    WarehouseHeld,
    connect_read_only,
    duckdb_type,
    ensure_raw_views,
    parquet_view,
    relocate_views,
    sync_views,
)
from tests.support.frames import DAY, sample_frame, trades_frame
from tests.support.paths import REPO_ROOT
from tests.support.privileges import bound_by_permissions

RAW_VIEWS = [f"{RAW_SCHEMA}.{table}" for table in lake_tables()]


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path / "lake")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse.duckdb"


def describe(warehouse: Path, view: str) -> list[tuple[str, str]]:
    with connect_read_only(warehouse) as connection:
        return [(row[0], row[1]) for row in connection.execute(f"DESCRIBE {view}").fetchall()]


def query(warehouse: Path, sql: str) -> list[tuple]:
    with connect_read_only(warehouse) as connection:
        return connection.execute(sql).fetchall()


def test_views_count_the_rows_of_every_partition(lake: Lake, warehouse: Path) -> None:
    lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 120))
    lake.write_partition(
        "trades", "kalshi", DAY + timedelta(days=1), trades_frame("kalshi", DAY + timedelta(days=1), 80)
    )
    assert ensure_raw_views(warehouse, lake) == RAW_VIEWS
    assert query(warehouse, "SELECT count(*) FROM raw.trades") == [(200,)]
    assert query(warehouse, "SELECT platform, date, count(*) FROM raw.trades GROUP BY ALL ORDER BY ALL") == [
        ("kalshi", DAY + timedelta(days=1), 80),
        ("polymarket", DAY, 120),
    ]


def test_a_count_of_a_view_reads_no_column_of_the_files(lake: Lake, warehouse: Path) -> None:
    lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 120))
    ensure_raw_views(warehouse, lake)
    plan = query(warehouse, "EXPLAIN SELECT count(*) FROM raw.trades")[0][1]
    scan = plan[plan.index("READ_PARQUET"):]
    read = scan[scan.index("Projections:") + len("Projections:"):].split("│")[0].split(",")
    assert {column.strip() for column in read} <= set(TABLES["trades"].partition_columns)


def test_views_list_the_schema_columns_with_partition_types_from_the_path(lake: Lake, warehouse: Path) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 3))
    ensure_raw_views(warehouse, lake)
    columns = describe(warehouse, "raw.trades")
    assert [name for name, _ in columns] == list(TABLES["trades"].column_names)
    assert dict(columns)["platform"] == "VARCHAR"
    assert dict(columns)["date"] == "DATE"
    assert dict(columns)["timestamp"] == "TIMESTAMP WITH TIME ZONE"


def view_rows(warehouse: Path, table: str) -> pl.DataFrame:
    """Every row of ``raw.<table>`` as polars reads DuckDB's answer, in the table's sort order within partitions."""
    spec = TABLES[table]
    with connect_read_only(warehouse) as connection:
        connection.execute("SET TimeZone = 'UTC'")
        arrow = connection.sql(f"SELECT * FROM raw.{table}").to_arrow_table()
    return pl.from_arrow(arrow).sort("platform", "date", *spec.sort_key, nulls_last=True, maintain_order=True)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_views_read_every_column_of_every_file_exactly_as_written(lake: Lake, warehouse: Path, table: str) -> None:
    # The views read the files without union_by_name (columns from the first file, matched by name in the
    # others): every column, nested ones included, must still come back as written, from every file.
    spec = TABLES[table]
    written = []
    for platform, day in (("kalshi", DAY), ("polymarket", DAY), ("polymarket", DAY + timedelta(days=1))):
        rows = (
            sample_frame(table, platform, day) if table != "trades" else trades_frame(platform, day, 50, seed=day.day)
        )
        lake.write_partition(table, platform, day, rows)
        written.append(rows.sort(spec.sort_key, nulls_last=True, maintain_order=True))
    ensure_raw_views(warehouse, lake)
    read = view_rows(warehouse, table)
    assert read.schema == spec.polars_schema
    assert_frame_equal(read, pl.concat(written))


def test_a_file_of_another_schema_fails_the_view_loudly_rather_than_reading_as_nulls(
    lake: Lake, warehouse: Path
) -> None:
    # The documented consequence of reading without union_by_name: a partition written before a column was
    # added must be rewritten; until then the view refuses to read rather than show NULLs for it.
    for day in (DAY, DAY + timedelta(days=1)):
        lake.write_partition("trades", "kalshi", day, trades_frame("kalshi", day, 5))
    older = lake.partition_path("trades", "kalshi", DAY + timedelta(days=1))
    pq.write_table(pq.read_table(older).drop_columns(["outcome"]), older)
    ensure_raw_views(warehouse, lake)
    with pytest.raises(duckdb.Error, match="outcome"):
        query(warehouse, "SELECT count(outcome) FROM raw.trades")


def test_empty_views_describe_exactly_like_views_over_files(lake: Lake, warehouse: Path) -> None:
    ensure_raw_views(warehouse, lake)
    empty = {view: describe(warehouse, view) for view in RAW_VIEWS}
    assert all(query(warehouse, f"SELECT count(*) FROM {view}") == [(0,)] for view in RAW_VIEWS)
    for table, spec in lake_tables().items():
        partition = spec.partition_values[0]
        if spec.rounds:
            lake.write_round(table, partition, DAY, datetime.combine(DAY, time(), UTC),
                             pl.DataFrame(schema=spec.polars_schema))
        else:
            lake.write_partition(table, partition, DAY, pl.DataFrame(schema=spec.polars_schema))
    ensure_raw_views(warehouse, lake)
    for table in lake_tables():
        assert describe(warehouse, f"raw.{table}") == empty[f"raw.{table}"], table
        [(sql,)] = query(
            warehouse, f"SELECT sql FROM duckdb_views() WHERE schema_name = 'raw' AND view_name = '{table}'"
        )
        assert "read_parquet" in sql


def test_a_first_partition_shows_in_its_empty_view_without_a_write(lake: Lake, warehouse: Path) -> None:
    assert ensure_raw_views(warehouse, lake) == RAW_VIEWS
    stamp = os.stat(warehouse).st_mtime_ns
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 9))
    assert query(warehouse, "SELECT count(*) FROM raw.trades") == [(9,)]
    assert ensure_raw_views(warehouse, lake) == []
    assert os.stat(warehouse).st_mtime_ns == stamp


def test_unchanged_views_in_an_unchanged_file_are_not_written_again(lake: Lake, warehouse: Path) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 9))
    assert ensure_raw_views(warehouse, lake) == RAW_VIEWS
    stamp = os.stat(warehouse).st_mtime_ns
    assert ensure_raw_views(warehouse, lake) == []  # the same views, the file as this process left it
    assert os.stat(warehouse).st_mtime_ns == stamp


def test_views_dropped_by_another_writer_are_written_again(lake: Lake, warehouse: Path) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 9))
    ensure_raw_views(warehouse, lake)
    with duckdb.connect(str(warehouse)) as connection:
        connection.execute("DROP VIEW raw.trades")
    assert ensure_raw_views(warehouse, lake) == RAW_VIEWS
    assert query(warehouse, "SELECT count(*) FROM raw.trades") == [(9,)]


def test_a_deleted_warehouse_file_is_written_again(lake: Lake, warehouse: Path) -> None:
    ensure_raw_views(warehouse, lake)
    warehouse.unlink()
    assert ensure_raw_views(warehouse, lake) == RAW_VIEWS
    assert query(warehouse, "SELECT count(*) FROM raw.trades") == [(0,)]


def test_views_use_absolute_paths(tmp_path: Path, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    lake = Lake(Path("lake"))
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 4))
    ensure_raw_views(warehouse, lake)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert query(warehouse, "SELECT count(*) FROM raw.trades") == [(4,)]


def test_other_schemas_are_left_alone(lake: Lake, warehouse: Path) -> None:
    with duckdb.connect(str(warehouse)) as connection:
        connection.execute("CREATE SCHEMA staging; CREATE TABLE staging.kept AS SELECT 1 AS x")
    ensure_raw_views(warehouse, lake)
    assert query(warehouse, "SELECT x FROM staging.kept") == [(1,)]


ANALYST = """
import sys
from pathlib import Path
from pipeline.engine.warehouse.views import connect_read_only

connection = connect_read_only(Path(sys.argv[1]))
stop = Path(sys.argv[2])
last = None
while True:
    stopping = stop.exists()
    (count,) = connection.execute("SELECT count(*) FROM raw.trades").fetchall()[0]
    if count != last:
        print(count, flush=True)
        last = count
    if stopping:
        break
"""


def test_an_analyst_holding_the_file_neither_fails_a_run_nor_misses_new_partitions(
    tmp_path: Path, lake: Lake, warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 100))
    assert ensure_raw_views(warehouse, lake) == RAW_VIEWS
    stop = tmp_path / "stop"
    analyst = subprocess.Popen(
        [sys.executable, "-c", ANALYST, str(warehouse), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    totals = [100]
    try:
        assert analyst.stdout.readline() == "100\n", analyst.stderr.read()
        first_partitions = [table for table in TABLES if table != "trades"]  # none changes its view
        with caplog.at_level(logging.WARNING, logger="pipeline.engine.warehouse.views"):
            for i, table in enumerate(first_partitions, start=1):
                platform, day = ("polymarket", "kalshi")[i % 2], DAY + timedelta(days=i)
                lake.write_partition(table, platform, day, sample_frame(table, platform, day))
                lake.write_partition("trades", platform, day, trades_frame(platform, day, 50 * i, seed=i))
                totals.append(totals[-1] + 50 * i)
                assert ensure_raw_views(warehouse, lake) == []
        stop.touch()
        output, errors = analyst.communicate(timeout=60)
    finally:
        analyst.kill()
    assert (analyst.returncode, errors) == (0, "")
    seen = [100, *(int(line) for line in output.split())]
    assert seen[-1] == totals[-1]
    assert set(seen) <= set(totals)
    assert seen == sorted(seen)
    assert [r for r in caplog.records if r.name == "pipeline.engine.warehouse.views"] == []  # nothing to write


def test_a_read_only_connection_of_this_process_is_also_skipped(
    lake: Lake, warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    duckdb.connect(str(warehouse)).close()  # a warehouse file without the views: they must be written
    with connect_read_only(warehouse), caplog.at_level(logging.WARNING, logger="pipeline.engine.warehouse.views"):
        assert ensure_raw_views(warehouse, lake) == []
    assert "in use elsewhere" in caplog.records[-1].getMessage()
    assert ensure_raw_views(warehouse, lake) == RAW_VIEWS  # the next run that finds the file free writes them


PIPELINE_HOLDING_THE_FILE = """
import sys, time
import duckdb

with duckdb.connect(sys.argv[1]):
    print("held", flush=True)
    time.sleep(0.5)
"""


def test_connect_read_only_waits_out_a_pipeline_holding_the_file(lake: Lake, warehouse: Path) -> None:
    ensure_raw_views(warehouse, lake)
    pipeline = subprocess.Popen(
        [sys.executable, "-c", PIPELINE_HOLDING_THE_FILE, str(warehouse)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert pipeline.stdout.readline() == "held\n"
        with connect_read_only(warehouse) as connection:
            assert connection.execute("SELECT count(*) FROM raw.trades").fetchall() == [(0,)]
    finally:
        pipeline.kill()
        pipeline.communicate()


def test_a_readers_session_parses_footers_once_and_still_sees_a_replaced_partition(
    lake: Lake, warehouse: Path
) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 10))
    ensure_raw_views(warehouse, lake)
    with connect_read_only(warehouse, lake) as connection:
        assert connection.execute("SELECT current_setting('parquet_metadata_cache')").fetchall() == [(True,)]
        assert connection.execute("SELECT count(*) FROM raw.trades").fetchall() == [(10,)]
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 25))
        assert connection.execute("SELECT count(*), count(DISTINCT trade_id) FROM raw.trades").fetchall() == [
            (25, 25)
        ]


def test_other_connection_errors_are_raised(lake: Lake, tmp_path: Path) -> None:
    not_a_database = tmp_path / "warehouse.duckdb"
    not_a_database.mkdir()
    with pytest.raises(duckdb.Error):
        ensure_raw_views(not_a_database, lake)


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (pl.String(), "VARCHAR"),
        (pl.Datetime("us", "UTC"), "TIMESTAMP WITH TIME ZONE"),
        (pl.List(pl.String()), "VARCHAR[]"),
        (pl.List(pl.Struct({"key": pl.String(), "value": pl.Float64()})), 'STRUCT("key" VARCHAR, "value" DOUBLE)[]'),
    ],
)
def test_duckdb_types_of_polars_types(dtype: pl.DataType, expected: str) -> None:
    assert duckdb_type(dtype) == expected


def test_a_polars_type_without_a_duckdb_type_is_an_error() -> None:
    with pytest.raises(TypeError, match="no DuckDB type for polars type"):
        duckdb_type(pl.Int8())


def _session(views: list[View]) -> duckdb.DuckDBPyConnection:
    """A build's session in which `views` exist (what sync_views reads their definitions from)."""
    session = duckdb.connect()
    for schema in {view.schema for view in views}:
        session.execute(f"CREATE SCHEMA {schema}")
    for view in views:
        session.execute(view.statement)
    return session


def test_a_build_replaces_the_views_it_wrote_and_leaves_an_analysts_own(warehouse: Path) -> None:
    with duckdb.connect(str(warehouse)) as connection:
        connection.execute("CREATE SCHEMA marts; CREATE VIEW marts.mine AS SELECT 42 AS answer")
    kept, dropped = View("marts", "kept", "SELECT 1 AS x"), View("marts", "dropped", "SELECT 2 AS y")
    with _session([kept, dropped]) as session:
        assert sync_views(warehouse, [kept, dropped], session)
    with _session([kept]) as session:  # the next build's project no longer has `dropped`
        assert sync_views(warehouse, [kept], session)
        assert not sync_views(warehouse, [kept], session)  # nothing changed since: the file is not written
    assert query(warehouse, "SELECT view_name FROM duckdb_views() WHERE schema_name = 'marts' ORDER BY 1") == [
        ("kept",), ("mine",)]
    assert query(warehouse, "SELECT answer FROM marts.mine") == [(42,)]


UNREADABLE_LAKE = """
import json, sys
from pathlib import Path
import duckdb
from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.build import LakeUnreadableError, build
from pipeline.engine.warehouse.project import load_project
from pipeline.engine.warehouse.views import raw_views

lake, sql_dir, warehouse = Lake(Path(sys.argv[1])), Path(sys.argv[2]), Path(sys.argv[3])
said = {"unreadable": [str(path) for path in lake.unreadable("trades")], "listed": len(lake.partitions("trades"))}
with duckdb.connect() as session:
    session.execute("CREATE SCHEMA raw")
    for view in raw_views(lake):
        session.execute(view.statement)
    said["raw_trades"] = session.execute("SELECT count(*) FROM raw.trades").fetchone()[0]
project = load_project(sql_dir)
try:
    list(build(project, lake.root, warehouse, project.models, project.tests))
except LakeUnreadableError as error:
    said["build"] = str(error)
print(json.dumps(said))
"""


def test_a_partition_that_cannot_be_listed_is_named_and_fails_the_build(tmp_path: Path) -> None:
    """DuckDB's glob and the lake's own listing pass over a directory they may not list (mode 000, another
    user's umask) without a word; the lake names it, and a build refuses to leave its rows out."""
    lake = Lake(tmp_path / "lake")
    for platform in ("kalshi", "polymarket"):
        lake.write_partition("trades", platform, DAY, trades_frame(platform, DAY, 10))
    closed = lake.partition_path("trades", "polymarket", DAY).parent
    sql_dir = tmp_path / "sql"
    (sql_dir / "marts").mkdir(parents=True)
    (sql_dir / "marts" / "trade_count.sql").write_text("SELECT count(*) AS trades FROM raw.trades\n")
    closed.chmod(0)
    try:
        child = subprocess.run(
            bound_by_permissions([sys.executable, "-c", UNREADABLE_LAKE, str(lake.root), str(sql_dir),
                                  str(tmp_path / "w.duckdb")]),
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])},
        )
    finally:
        closed.chmod(0o755)
    assert child.returncode == 0, child.stderr
    said = json.loads(child.stdout)
    assert said["raw_trades"] == 10 and said["listed"] == 1  # what readers that glob see: half, silently
    assert said["unreadable"] == [str(closed)]
    assert str(closed) in said["build"] and "cannot be read" in said["build"]


def _data_dir_with_a_mart(data: Path) -> None:
    """A data dir as pmw leaves it: a trades partition, the raw views, and a table mart's view over its file; and
    an analyst's own view over a file outside the lake, which is not pmw's to move."""
    lake = Lake(data / "lake")
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 7))
    ensure_raw_views(data / "warehouse.duckdb", lake)
    mart = lake.root / "_models" / "marts" / "tiny.parquet"
    mart.parent.mkdir(parents=True)
    pl.DataFrame({"n": [1, 2]}).write_parquet(mart)
    with duckdb.connect(str(data / "warehouse.duckdb")) as db:
        db.execute("CREATE SCHEMA marts")
        parquet_view("marts", "tiny", mart).write(db)
        db.execute(f"CREATE VIEW marts.mine AS SELECT * FROM read_parquet('{mart}')")


def test_a_moved_data_dir_reads_its_own_lake_once_pmw_has_opened_it(tmp_path: Path) -> None:
    _data_dir_with_a_mart(tmp_path / "data")
    moved = tmp_path / "elsewhere" / "data"
    moved.parent.mkdir()
    (tmp_path / "data").rename(moved)
    warehouse, lake = moved / "warehouse.duckdb", Lake(moved / "lake")
    assert sorted(relocate_views(warehouse, lake)) == sorted([*RAW_VIEWS, "marts.tiny"])
    with duckdb.connect(str(warehouse), read_only=True) as db:  # as an analyst opens it, from any directory
        assert db.execute("SELECT count(*) FROM raw.trades").fetchone() == (7,)
        assert db.execute("SELECT sum(n) FROM marts.tiny").fetchone() == (3,)
        with pytest.raises(duckdb.IOException, match="No files found"):  # the analyst's view is theirs to fix
            db.execute("FROM marts.mine").fetchall()
    assert relocate_views(warehouse, lake) == []  # once is enough


def test_a_copied_data_dir_stops_reading_the_original(tmp_path: Path) -> None:
    _data_dir_with_a_mart(tmp_path / "data")
    shutil.copytree(tmp_path / "data", tmp_path / "copy")
    copy = Lake(tmp_path / "copy" / "lake")
    copy.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 3))  # the copy goes its own way
    relocate_views(tmp_path / "copy" / "warehouse.duckdb", copy)
    with connect_read_only(tmp_path / "copy" / "warehouse.duckdb") as db:
        assert db.execute("SELECT count(*) FROM raw.trades").fetchone() == (3,)
    with connect_read_only(tmp_path / "data" / "warehouse.duckdb") as db:
        assert db.execute("SELECT count(*) FROM raw.trades").fetchone() == (7,)


def test_views_that_must_move_while_the_file_is_held_say_so(tmp_path: Path) -> None:
    _data_dir_with_a_mart(tmp_path / "data")
    (tmp_path / "data").rename(tmp_path / "moved")
    warehouse = tmp_path / "moved" / "warehouse.duckdb"
    with connect_read_only(warehouse), pytest.raises(WarehouseHeld) as held:
        relocate_views(warehouse, Lake(tmp_path / "moved" / "lake"))
    assert f"read the lake {tmp_path / 'data' / 'lake'}, not {tmp_path / 'moved' / 'lake'}" in str(held.value)
