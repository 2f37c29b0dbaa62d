"""A build's marts reach readers all at once: a build stopped between two marts leaves readers the previous build
whole; the next build publishes every mart together, says which build it is, and removes the builds no one reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.build import Built, build
from pipeline.engine.warehouse.builds import MODELS_DIR, builds_line, shown_builds
from pipeline.engine.warehouse.project import load_project
from pipeline.engine.warehouse.views import connect_read_only
from tests.support.frames import DAY, trades_frame

MARTS = {  # two marts of the same trades, as market_daily and platform_daily are
    "market_trades.sql": "-- materialized: table\nSELECT count(*) AS trades FROM raw.trades\n",
    "platform_trades.sql": "-- materialized: table\nSELECT count(*) AS trades FROM raw.trades GROUP BY ALL\n",
}


class Killed(Exception):
    """What stops a build between two marts in these tests (a kill, a crash)."""


@pytest.fixture
def world(tmp_path: Path) -> tuple[Lake, Path, Path]:
    lake = Lake(tmp_path / "lake")
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 10))
    sql = tmp_path / "sql" / "marts"
    sql.mkdir(parents=True)
    for name, text in MARTS.items():
        (sql / name).write_text(text)
    return lake, tmp_path / "sql", tmp_path / "warehouse.duckdb"


def read_marts(warehouse: Path, lake: Lake) -> tuple[int, int, dict[str, str] | None]:
    """What a reader sees: each mart's trades, and which build each comes from."""
    with connect_read_only(warehouse, lake) as reader:
        [(market,)] = reader.execute("SELECT trades FROM marts.market_trades").fetchall()
        [(platform,)] = reader.execute("SELECT trades FROM marts.platform_trades").fetchall()
        return market, platform, shown_builds(reader)


def test_a_build_stopped_between_two_marts_leaves_readers_the_previous_build_whole(
    world: tuple[Lake, Path, Path]
) -> None:
    lake, sql_dir, warehouse = world
    project = load_project(sql_dir)
    list(build(project, lake, warehouse, project.models, ()))
    market, platform, first = read_marts(warehouse, lake)
    assert (market, platform) == (10, 10) and first is not None and len(set(first.values())) == 1
    lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 5))
    stopped = build(project, lake, warehouse, project.models, ())
    assert isinstance(next(stopped), Built)  # the first mart is written ...
    with pytest.raises(Killed):
        stopped.throw(Killed())  # ... and the build stops before the second
    assert read_marts(warehouse, lake) == (10, 10, first)  # the previous build, whole
    list(build(project, lake, warehouse, project.models, ()))
    market, platform, second = read_marts(warehouse, lake)
    assert (market, platform) == (15, 15) and second is not None and len(set(second.values())) == 1
    assert set(second.values()) != set(first.values())
    assert builds_line(second) == f"build {next(iter(second.values()))}"
    kept = sorted(path.name for path in (lake.root / MODELS_DIR).glob("build-*"))
    assert kept == sorted(f"build-{b}" for b in {*first.values(), *second.values()})  # the stopped one removed


def test_a_model_that_fails_keeps_its_published_table_and_says_so(world: tuple[Lake, Path, Path]) -> None:
    lake, sql_dir, warehouse = world
    project = load_project(sql_dir)
    list(build(project, lake, warehouse, project.models, ()))
    (sql_dir / "marts" / "platform_trades.sql").write_text("-- materialized: table\nSELECT no_such_column\n")
    lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 5))
    list(build(load_project(sql_dir), lake, warehouse, project.models, ()))
    market, platform, builds = read_marts(warehouse, lake)
    assert (market, platform) == (15, 10)
    assert builds is not None and builds_line(builds).endswith("; of earlier builds: marts.platform_trades")


def test_the_files_of_the_layout_before_build_ids_go_once_no_view_reads_them(world: tuple[Lake, Path, Path]) -> None:
    lake, sql_dir, warehouse = world
    legacy = lake.root / MODELS_DIR / "marts" / "market_trades.parquet"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(b"a table of an older pmw")
    project = load_project(sql_dir)
    list(build(project, lake, warehouse, project.models, ()))
    assert not legacy.parent.exists()
    assert [path.name for path in (lake.root / MODELS_DIR).iterdir() if not path.name.startswith(".")] == [
        f"build-{build_id}" for build_id in set(read_marts(warehouse, lake)[2].values())]  # type: ignore[union-attr]
