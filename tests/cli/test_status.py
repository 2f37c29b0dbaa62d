"""`pmw status` on a small lake written directly (no Dagster run): a missing range of days, rejects, a file that
does not read, yesterday landed or not; and on an instance holding an incomplete partition and failed checks."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.cli.main import main
from pipeline.cli.status.facts import day_ranges
from pipeline.engine.lake.scrub import scrub
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES, lake_tables
from pipeline.engine.warehouse.build import build
from pipeline.engine.warehouse.project import load_project
from tests.support.frames import rejects_frame, sample_frame

YESTERDAY = datetime.now(UTC).date() - timedelta(days=1)
DAYS = [YESTERDAY - timedelta(days=n) for n in (3, 2, 1, 0)]  # a four-day lake ending yesterday
GAP = DAYS[1:3]  # trades on kalshi never landed these
CORRUPT = ("events", "kalshi", DAYS[0])
CORRUPT_REJECTS = ("series", "polymarket", DAYS[0])


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every table on both platforms for four days but: a two-day gap in kalshi's trades, three rejects in
    polymarket's markets of the second day, kalshi's events of the first day damaged, and the rejects of
    polymarket's series of the first day. Written once, copied by each test."""
    lake = Lake(tmp_path_factory.mktemp("template") / "lake")
    for table in TABLES:
        for platform in ("polymarket", "kalshi"):
            for day in DAYS:
                if not (table == "trades" and platform == "kalshi" and day in GAP):
                    rejected = (table, platform, day) in {("markets", "polymarket", DAYS[1]), CORRUPT_REJECTS}
                    rejects = rejects_frame(3) if rejected else None
                    lake.write_partition(table, platform, day, sample_frame(table, platform, day, n=2), rejects)
    lake.partition_path(*CORRUPT).write_bytes(b"not parquet")
    lake.rejects_path(*CORRUPT_REJECTS).write_bytes(b"not parquet")
    return lake.root


@pytest.fixture
def lake(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lake:
    """A copy of the template lake in PMW_DATA_DIR, no DAGSTER_HOME, both platforms configured."""
    for name in ("DAGSTER_HOME", "PMW_PLATFORMS", "PMW_START_DATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    shutil.copytree(template, tmp_path / "data" / "lake")
    return Lake(tmp_path / "data" / "lake")


def status(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["status", *args])
    return code, capsys.readouterr().out


def row_of(out: str, table: str, platform: str) -> list[str]:
    return next(line.split() for line in out.splitlines() if line.split()[:2] == [table, platform])


def test_plain_status_names_gaps_rejects_and_unreadable_files(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = status(capsys)
    assert code == 0  # yesterday landed everywhere; no instance, so no check is known to have failed
    gap = f"{GAP[0]}..{GAP[1]}"
    assert row_of(out, "trades", "kalshi") == ["trades", "kalshi", "2", str(DAYS[0]), str(DAYS[3]), "4", "0", "?",
                                               "0", "2:", gap]
    assert row_of(out, "markets", "polymarket")[2:9] == ["4", str(DAYS[0]), str(DAYS[3]), "8", "3", "?", "0"]
    assert row_of(out, "events", "kalshi")[2:] == ["3", str(DAYS[1]), str(DAYS[3]), "6", "0", "?", "1", "1:",
                                                   str(DAYS[0])]
    assert f"UNREADABLE {lake.partition_path(*CORRUPT)}" in out
    assert "unknown without DAGSTER_HOME" in out
    assert out.splitlines()[-1] == f"yesterday ({YESTERDAY}): landed for every table on polymarket, kalshi"


def test_json_status_has_the_same_facts(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = status(capsys, "--json")
    document = json.loads(out)
    assert code == 0 and document["ok"] is True
    assert document["window"] == {"first": str(DAYS[0]), "last": str(YESTERDAY), "days": 4}
    assert document["failed_checks"] is None and document["dagster_home"] is None
    tables = {(t["table"], t["platform"]): t for t in document["tables"]}
    assert len(tables) == 2 * len(TABLES)
    assert tables["trades", "kalshi"] == {
        "table": "trades", "platform": "kalshi", "partitions": 2, "first_day": str(DAYS[0]),
        "last_day": str(DAYS[3]), "daily": True, "missing_days": [f"{GAP[0]}..{GAP[1]}"], "missing_count": 2, "rows": 4,
        "rejects": 0, "incomplete": None, "unreadable": [],
    }
    assert tables["markets", "polymarket"]["rejects"] == 3
    assert tables["events", "kalshi"]["unreadable"] == [f"events/platform=kalshi/date={DAYS[0]}/data.parquet"]
    series = tables["series", "polymarket"]
    assert (series["partitions"], series["rejects"], series["missing_count"]) == (4, 0, 0)
    assert series["unreadable"] == [f"_rejects/series/platform=polymarket/date={DAYS[0]}/rejects.parquet"]
    assert document["yesterday"] == {"day": str(YESTERDAY), "landed": True, "missing": []}


def test_a_missing_yesterday_exits_1_and_days_narrows_the_window(lake: Lake,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    lake.partition_path("price_history", "kalshi", YESTERDAY).unlink()
    code, out = status(capsys, "--days", "2")
    assert code == 1
    assert out.splitlines()[0].endswith(f", {DAYS[2]}..{YESTERDAY}")
    assert row_of(out, "trades", "kalshi")[2:5] == ["1", str(YESTERDAY), str(YESTERDAY)]
    assert row_of(out, "events", "kalshi")[-1] == "0"  # its damaged day is outside the window
    assert out.splitlines()[-1] == f"yesterday ({YESTERDAY}): MISSING for price_history kalshi"
    code, out = status(capsys, "--json", "--days", "2")
    assert code == 1
    assert json.loads(out)["yesterday"]["missing"] == [{"table": "price_history", "platform": "kalshi"}]


def test_bad_arguments_and_configuration_exit_2(lake: Lake, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["status", "--days", "0"])
    assert exit_.value.code == 2
    monkeypatch.setenv("PMW_START_DATE", "yesterday")
    assert main(["status"]) == 2
    assert "PMW_START_DATE" in capsys.readouterr().err
    monkeypatch.delenv("PMW_START_DATE")
    monkeypatch.setenv("DAGSTER_HOME", "relative/home")
    assert main(["status"]) == 2
    assert "must be an absolute path" in capsys.readouterr().err


def test_failed_checks_and_incomplete_partitions_come_from_the_instance(
    lake: Lake, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The instance is an ephemeral one standing for DAGSTER_HOME's (creating a real one on disk costs seconds;
    `pmw_instance` opening DAGSTER_HOME's is tested in test_instance.py)."""
    instance = dg.DagsterInstance.ephemeral()
    monkeypatch.setenv("DAGSTER_HOME", "/nonexistent/stand-in")
    monkeypatch.setattr("pipeline.cli.status.records.pmw_instance", lambda data_dir: instance)
    key = f"{YESTERDAY}|polymarket"
    instance.report_runless_asset_event(dg.AssetMaterialization(
        "trades", partition=key, metadata={"complete": False, "incomplete_markets": 4}))
    for check, passed in (("sizes_positive", False), ("unique_key", True)):
        instance.report_runless_asset_event(dg.AssetCheckEvaluation(
            dg.AssetKey("trades"), check, passed, partition=key, description=f"{check} said so"))
    code, out = status(capsys)
    assert code == 1
    lines = out.splitlines()
    assert row_of(out, "trades", "polymarket")[7] == "1"
    assert f"INCOMPLETE trades polymarket {YESTERDAY}: 4 market(s) not read back to the day's start" in lines
    assert f"FAILED CHECK trades.sizes_positive polymarket {YESTERDAY} (ERROR): sizes_positive said so" in lines
    assert not any("unique_key" in line for line in lines)  # it passed
    document = json.loads(status(capsys, "--json")[1])
    assert document["failed_checks"] == [{"asset": "trades", "check": "sizes_positive", "platform": "polymarket",
                                          "day": str(YESTERDAY), "severity": "ERROR",
                                          "description": "sizes_positive said so"}]
    trades = next(t for t in document["tables"] if (t["table"], t["platform"]) == ("trades", "polymarket"))
    assert trades["incomplete"] == [{"day": str(YESTERDAY), "markets": 4}]
    assert next(t for t in document["tables"] if t["table"] == "series")["incomplete"] == []
    warned = dg.DagsterInstance.ephemeral()  # a failed warning alone is listed, and does not fail the status
    monkeypatch.setattr("pipeline.cli.status.records.pmw_instance", lambda data_dir: warned)
    warned.report_runless_asset_event(dg.AssetCheckEvaluation(
        dg.AssetKey("trades"), "repeats_agree", False, partition=key, description="1 conflicting repeat",
        severity=dg.AssetCheckSeverity.WARN))
    code, out = status(capsys)
    assert code == 0, out
    assert f"FAILED CHECK trades.repeats_agree polymarket {YESTERDAY} (WARN): 1 conflicting repeat" in out


def test_a_failed_reconciliation_is_listed_naming_the_markets_concerned(
    lake: Lake, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = dg.DagsterInstance.ephemeral()
    monkeypatch.setenv("DAGSTER_HOME", "/nonexistent/stand-in")
    monkeypatch.setattr("pipeline.cli.status.records.pmw_instance", lambda data_dir: instance)
    description = "every market whose record says it traded on the day has trades landed. FAILED for 2: m1, m2"
    instance.report_runless_asset_event(dg.AssetCheckEvaluation(
        dg.AssetKey("trades"), "traded_markets_have_trades", False, partition=f"{YESTERDAY}|kalshi",
        description=description, metadata={"concerned": dg.MetadataValue.json(["m1", "m2"])}))
    code, out = status(capsys)
    assert code == 1
    assert f"FAILED CHECK trades.traded_markets_have_trades kalshi {YESTERDAY} (ERROR): {description}" in out
    [failed] = json.loads(status(capsys, "--json")[1])["failed_checks"]
    assert failed["concerned"] == ["m1", "m2"]


def test_day_ranges_join_consecutive_days() -> None:
    days = [date(2026, 11, d) for d in (5, 1, 2, 3, 9, 10)]
    assert day_ranges(days) == ["2026-11-01..2026-11-03", "2026-11-05", "2026-11-09..2026-11-10"]


def test_without_dagster_home_the_data_dirs_own_home_is_read(
    lake: Lake, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `pmw demo` (which records its runs in <data dir>/dagster_home), `pmw status` reads that instance."""
    home = lake.root.parent / "dagster_home"
    home.mkdir()
    instance = dg.DagsterInstance.ephemeral()
    opened: list[Path] = []
    monkeypatch.setattr("pipeline.cli.common.instance.instance_at", lambda at: opened.append(at) or instance)
    instance.report_runless_asset_event(dg.AssetCheckEvaluation(
        dg.AssetKey("trades"), "sizes_positive", False, partition=f"{YESTERDAY}|kalshi", description="said so"))
    code, out = status(capsys)
    assert opened == [home.resolve()] and code == 1
    assert f"FAILED CHECK trades.sizes_positive kalshi {YESTERDAY} (ERROR): said so" in out.splitlines()
    assert json.loads(status(capsys, "--json")[1])["dagster_home"] == str(home.resolve())


def test_every_table_of_the_lake_is_listed_where_it_landed(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    """Order books, traders and sports too, on the platforms (or leagues) they landed for; they land from watch
    lists and rounds, not every day, so no day of theirs is counted missing, nor yesterday's verdict changed."""
    landed = {"orderbook_snapshots": "limitless", "profiles": "kalshi", "futures": "nfl"}
    for table, value in landed.items():
        empty = pl.DataFrame(schema=lake_tables()[table].polars_schema)
        if lake_tables()[table].rounds:
            lake.write_round(table, value, DAYS[2], datetime.combine(DAYS[2], time(12), UTC), empty)
        else:
            lake.write_partition(table, value, DAYS[2], empty)
    code, out = status(capsys)
    assert code == 0
    for table, value in landed.items():
        assert row_of(out, table, value) == [table, value, "1", str(DAYS[2]), str(DAYS[2]), "0", "0", "?", "0", "-"]
    assert not any(line.split()[:1] == ["orderbook_levels"] for line in out.splitlines())  # never landed
    assert out.splitlines()[-1] == f"yesterday ({YESTERDAY}): landed for every table on polymarket, kalshi"


def test_the_last_scrub_is_shown_and_its_bad_files_fail_the_status(
    lake: Lake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = status(capsys)
    assert code == 0 and "lake scrub: never (job lake_scrub runs it daily; pmw verify reads every file)" in out
    at = datetime(2026, 11, 26, 3, 0, tzinfo=UTC)
    record = scrub(lake, at, timedelta(days=7))
    code, out = status(capsys)
    assert code == 1
    [line] = [line for line in out.splitlines() if line.startswith("lake scrub:")]
    assert line.startswith(f"lake scrub: 2026-11-26 03:00 UTC, the whole lake, {record.checked} files read, 2 bad: ")
    assert str(lake.partition_path(*CORRUPT)) in line and "pmw restore" in line
    assert json.loads(status(capsys, "--json")[1])["scrub"] == record.as_json()


def test_the_build_the_marts_are_of_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    lake = Lake(tmp_path / "data" / "lake")
    lake.write_partition("trades", "kalshi", YESTERDAY, sample_frame("trades", "kalshi", YESTERDAY, n=2))
    assert "marts: no build published yet (pmw sql builds them)" in status(capsys)[1]
    (tmp_path / "sql" / "marts").mkdir(parents=True)
    (tmp_path / "sql" / "marts" / "n.sql").write_text("-- materialized: table\nSELECT count(*) AS n FROM raw.trades\n")
    project = load_project(tmp_path / "sql")
    list(build(project, lake, tmp_path / "data" / "warehouse.duckdb", project.models, ()))
    [line] = [line for line in status(capsys)[1].splitlines() if line.startswith("marts: ")]
    [build_id] = json.loads(status(capsys, "--json")[1])["marts"].values()
    assert line == f"marts: build {build_id}"
