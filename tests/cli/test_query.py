"""`pmw query` and `pmw shell`: SQL on the warehouse opened read-only, and the README's SQL run as written."""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.cli.main import main
from pipeline.cli.shell import run_shell, statements
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse import views
from tests.support.frames import DAY, trades_frame
from tests.support.privileges import bound_by_permissions
from tests.support.readme_sql import readme_sql

ROWS = 250


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small warehouse file in PMW_DATA_DIR: a view `raw.numbers` of ROWS rows and a table `marts.tiny`; the
    source's settings are incomplete (no API key), which the queries never read."""
    data = tmp_path / "data"
    data.mkdir()
    path = data / "warehouse.duckdb"
    with duckdb.connect(str(path)) as db:
        db.execute("CREATE SCHEMA raw; CREATE SCHEMA marts")
        db.execute("CREATE VIEW raw.numbers AS SELECT range AS n, 'row ' || range AS label, "
                   "TIMESTAMPTZ '2026-11-20 23:30:00+00' + to_hours(range) AS seen_at FROM range(250)")
        db.execute("CREATE TABLE marts.tiny AS SELECT 1 AS id, 'a,b \"quoted\"' AS text")
    monkeypatch.setenv("PMW_DATA_DIR", str(data))
    monkeypatch.setenv("PMW_SOURCE", "api")  # without the URL and key it needs: a query reads neither
    monkeypatch.delenv("PMW_API_KEY", raising=False)
    return path


def test_a_table_shows_the_first_rows_and_says_how_many_there_are(
    warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", "SELECT n, label, seen_at FROM raw.numbers ORDER BY n;"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\bn\b.*\blabel\b.*\bseen_at\b", out)
    assert "row 99" in out and "row 100" not in out
    assert "2026-11-20 23:30:00 UTC" in out  # times in UTC, whatever the machine's zone
    assert out.rstrip().endswith("first 100 of 250 rows (--max-rows shows more, --format csv all)")

    assert main(["query", "--max-rows", "300", "SELECT * FROM raw.numbers WHERE n < 3"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("\n3 rows")


def test_csv_and_json_go_to_standard_output_or_a_file_and_parquet_to_a_file_saying_so(
    warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sql = "SELECT id, text FROM marts.tiny"
    assert main(["query", "--format", "csv", sql]) == 0
    assert capsys.readouterr().out == 'id,text\n1,"a,b ""quoted"""\n'
    assert main(["query", "--format", "json", sql]) == 0
    assert json.loads(capsys.readouterr().out) == [{"id": 1, "text": 'a,b "quoted"'}]
    for file_format in ("csv", "json", "parquet"):
        target = tmp_path / f"numbers.{file_format}"
        assert main(["query", "--format", file_format, "-o", str(target), "FROM raw.numbers"]) == 0
        assert capsys.readouterr().out == f"pmw query: {ROWS} rows -> {target}\n", file_format
        frame = {"csv": pl.read_csv, "json": pl.read_json, "parquet": pl.read_parquet}[file_format](target)
        assert frame.height == ROWS and frame.columns == ["n", "label", "seen_at"], file_format


def test_a_reader_that_stops_early_gets_no_traceback(warehouse: Path) -> None:
    """`pmw query ... | head -1`: a process of its own, whose standard output is closed after the first line."""
    query = subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", "query", "--format", "csv",
                              "SELECT range AS n FROM range(1000000)"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert query.stdout is not None and query.stderr is not None
    assert query.stdout.readline() == "n\n"
    query.stdout.close()
    assert query.wait(timeout=60) == 0
    assert query.stderr.read() == ""


@pytest.mark.parametrize(
    ("argv", "status", "said"),
    [
        (["SELECT * FROM raw.nope"], 1, "Catalog Error: Table with name nope does not exist!"),
        (["SELEC 1"], 1, 'Parser Error: syntax error at or near "SELEC"'),
        (["CREATE TABLE marts.mine AS SELECT 1"], 1, "CREATE statement refused: a query reads only"),
        (["SELECT 1; SELECT 2"], 2, "expected one SQL statement, got 2"),
        (["--format", "parquet", "SELECT 1"], 2, "--format parquet writes a file: give it with -o FILE"),
        (["-o", "out.csv", "SELECT 1"], 2, "-o writes csv, json or parquet: give --format too"),
    ],
)
def test_a_failure_is_one_line_naming_its_cause(
    warehouse: Path, capsys: pytest.CaptureFixture[str], argv: list[str], status: int, said: str
) -> None:
    assert main(["query", *argv]) == status
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("pmw query: ") and said in captured.err
    assert captured.err.count("\n") == 1


def test_bad_arguments_exit_2(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["query", "--format", "xlsx", "SELECT 1"], ["query", "--max-rows", "0", "SELECT 1"], ["query"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2, argv
    capsys.readouterr()


def test_without_a_warehouse_both_commands_say_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "empty"))
    for command in (["query", "SELECT 1"], ["shell"]):
        assert main(command) == 1
        err = capsys.readouterr().err
        missing = tmp_path / "empty" / "warehouse.duckdb"
        assert f"no warehouse at {missing}: run `pmw demo` or `pmw backfill` first" in err
    assert not (tmp_path / "empty").exists()  # nothing created


@pytest.mark.parametrize("read_only", [True, False])
def test_another_process_holding_the_warehouse(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], read_only: bool
) -> None:
    """Read-only (an analyst's session) it is shared: the query takes no write lock. Read-write, DuckDB refuses
    every other process: after connect_read_only's wait (shortened here) one line names the file."""
    monkeypatch.setattr(views, "READ_ONLY_CONNECT_TIMEOUT_S", 0.1)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == 'ro'); "
                               "print('held', flush=True); sys.stdin.read()", str(warehouse), "ro" * read_only],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert main(["query", "--format", "csv", "SELECT count(*) AS n FROM raw.numbers"]) == (0 if read_only else 1)
    finally:
        holder.communicate("", timeout=10)
    captured = capsys.readouterr()
    if read_only:
        assert captured.out == f"n\n{ROWS}\n"
    else:
        assert captured.err == (f"pmw query: {warehouse} is held read-write by another process (a pipeline writing "
                                "its views, or a session opened read-write); try again when it is done\n")


def test_the_shell_runs_statements_across_lines_and_goes_on_after_an_error(warehouse: Path) -> None:
    typed = io.StringIO("SELECT count(*) AS how_many\n  FROM raw.numbers\n  WHERE n < 7;\n\nSELECT * FROM nope;\n"
                        ".tables\n.frobnicate\nSELECT 'one' AS first; SELECT 'last' AS word\n")
    out, err = io.StringIO(), io.StringIO()
    assert run_shell(warehouse, stdin=typed, out=out, err=err, history=warehouse.parent / "history") == 1
    shown = out.getvalue()
    assert re.search(r"how_many.*\n.*\n.*\b7\b", shown)
    assert "marts.tiny" in shown and "raw.numbers" in shown
    assert shown.index("one") < shown.index("last")  # both statements of a line; the last without its ';'
    said = err.getvalue().splitlines()
    assert len(said) == 2
    assert said[0].startswith("Error: Catalog Error: Table with name nope does not exist!")
    assert said[1] == "Error: unknown command .frobnicate; .help lists them"
    assert not (warehouse.parent / "history").exists()  # history is kept for a terminal only


def test_piped_statements_end_in_exit_1_when_one_failed(warehouse: Path) -> None:
    """`pmw shell < file.sql`: every statement runs, and the exit status says one of them failed."""
    out, err = io.StringIO(), io.StringIO()
    assert run_shell(warehouse, stdin=io.StringIO("SELECT * FROM nope;\nSELECT 42 AS answer;\n"), out=out, err=err) == 1
    assert "42" in out.getvalue() and err.getvalue().startswith("Error: Catalog Error")
    assert run_shell(warehouse, stdin=io.StringIO("SELECT 1;\n.tables\n"), out=io.StringIO()) == 0


def test_ctrl_c_drops_the_statement_being_typed_and_quit_ends_the_input() -> None:
    lines = iter(["SELECT 1", "\x03", "SELECT", "2;", ".quit", "SELECT 3;"])
    assert list(statements(lambda _prompt: next(lines, None))) == ["SELECT\n2;", ".quit", "SELECT 3;"]


def test_the_readme_examples_are_found() -> None:
    """Each is run on a landed warehouse by tests/defs/sql_models/test_sql_models.py, whose run lands one and
    builds the marts."""
    examples = readme_sql()
    assert len(examples) >= 6
    assert any(sql.startswith("SELECT * FROM marts.platform_daily") for sql in examples)


def test_a_moved_data_dir_is_queried_over_its_own_lake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    lake = Lake(first / "lake")
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 7))
    views.ensure_raw_views(first / "warehouse.duckdb", lake)
    first.rename(tmp_path / "moved")
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "moved"))
    assert main(["query", "--format", "csv", "SELECT count(*) AS trades FROM raw.trades"]) == 0
    assert capsys.readouterr().out == "trades\n7\n"


@pytest.fixture
def landed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lake:
    """A data dir whose lake holds two partitions of trades and whose warehouse has its raw views."""
    data = tmp_path / "landed"
    lake = Lake(data / "lake")
    for platform in ("kalshi", "polymarket"):
        lake.write_partition("trades", platform, DAY, trades_frame(platform, DAY, 7))
    views.ensure_raw_views(data / "warehouse.duckdb", lake)
    monkeypatch.setenv("PMW_DATA_DIR", str(data))
    return lake


def checksums(folder: Path) -> dict[Path, str]:
    return {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        ("COPY (SELECT 1 AS x) TO '{partition}' (FORMAT parquet)", "reads only"),
        ("EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{partition}' (FORMAT parquet)", "reads only"),
        ("COPY (SELECT 1 AS x) TO '{lake}/trades/extra.parquet' (FORMAT parquet, USE_TMP_FILE false)", "reads only"),
        ("SELECT * FROM read_text('/etc/passwd')", 'Cannot access file "/etc/passwd"'),
        ("SELECT * FROM read_blob('{outside}')", "Cannot access file"),
        ("ATTACH '{outside}' AS other", "reads only"),
        ("IMPORT DATABASE '{lake}'", "PRAGMA statement refused: a query reads only"),
        ("SET enable_external_access = true", "the configuration has been locked"),
        ("SET allowed_directories = ['/']", "the configuration has been locked"),
    ],
)
def test_a_query_reads_the_lake_and_never_writes_it_nor_reads_elsewhere(
    landed: Lake, tmp_path: Path, capsys: pytest.CaptureFixture[str], sql: str, said: str
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not the lake's\n")
    before = checksums(landed.root)
    partition = landed.partition_path("trades", "kalshi", DAY)
    statement = sql.format(partition=partition, lake=landed.root, outside=outside)
    assert main(["query", statement]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and said in captured.err and captured.err.count("\n") == 1, captured.err
    assert checksums(landed.root) == before
    assert outside.read_text() == "not the lake's\n"
    counted = "SELECT platform, count(*) AS n FROM raw.trades GROUP BY ALL ORDER BY 1"
    assert main(["query", "--format", "csv", counted]) == 0
    assert capsys.readouterr().out == "platform,n\nkalshi,7\npolymarket,7\n"


def test_the_shell_refuses_a_write_and_goes_on_reading(landed: Lake) -> None:
    before = checksums(landed.root)
    partition = landed.partition_path("trades", "kalshi", DAY)
    typed = io.StringIO(f"COPY (SELECT 1 AS x) TO '{partition}' (FORMAT parquet);\n"
                        "SELECT count(*) AS trades FROM raw.trades;\n")
    out, err = io.StringIO(), io.StringIO()
    warehouse = landed.root.parent / "warehouse.duckdb"
    # piped statements: the shell goes on after the refusal, and its exit status says one statement failed
    assert run_shell(warehouse, stdin=typed, out=out, err=err, history=warehouse.parent / "history") == 1
    assert err.getvalue().startswith("Error: ") and "reads only" in err.getvalue(), err.getvalue()
    assert re.search(r"trades.*\n.*\n.*\b14\b", out.getvalue())
    assert checksums(landed.root) == before


def test_an_output_file_in_the_lake_is_refused(landed: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    before = checksums(landed.root)
    target = landed.partition_path("trades", "kalshi", DAY)
    assert main(["query", "--format", "parquet", "-o", str(target), "SELECT 1 AS x"]) == 2
    assert "is in the lake" in capsys.readouterr().err
    assert checksums(landed.root) == before


def test_a_partition_that_cannot_be_listed_makes_the_query_fail_naming_it(landed: Lake) -> None:
    closed = landed.partition_path("trades", "polymarket", DAY).parent
    closed.chmod(0)
    try:
        child = subprocess.run(
            bound_by_permissions([sys.executable, "-m", "pipeline.cli.main", "query", "--format", "csv",
                                  "SELECT count(*) AS trades FROM raw.trades"]),
            capture_output=True, text=True, timeout=60,
        )
    finally:
        closed.chmod(0o755)
    assert child.returncode == 1, child.stdout
    assert child.stdout == ""
    assert str(closed) in child.stderr and "cannot be read" in child.stderr and child.stderr.count("\n") == 1


def test_a_lake_in_a_bucket_still_reads_and_is_never_written(
    tmp_path: Path, s3_lake_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the file system pmw registers with the connection: the bucket's prefix is the allowed location."""
    data = tmp_path / "bucket-data"
    monkeypatch.setenv("PMW_DATA_DIR", str(data))
    monkeypatch.setenv("PMW_LAKE_URL", s3_lake_url)
    lake = Lake.of(Settings.from_env())
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 7))
    views.ensure_raw_views(data / "warehouse.duckdb", lake)
    key = f"{s3_lake_url}/trades/platform=kalshi/date={DAY}/data.parquet"
    before = lake.store.stamp(f"trades/platform=kalshi/date={DAY}/data.parquet")
    assert main(["query", f"COPY (SELECT 1 AS x) TO '{key}' (FORMAT parquet)"]) == 1
    assert "COPY statement refused" in capsys.readouterr().err
    assert main(["query", "SELECT * FROM read_text('/etc/passwd')"]) == 1
    assert 'Cannot access file "/etc/passwd"' in capsys.readouterr().err
    assert lake.store.stamp(f"trades/platform=kalshi/date={DAY}/data.parquet") == before
    assert main(["query", "--format", "csv", "SELECT count(*) AS trades FROM raw.trades"]) == 0
    assert capsys.readouterr().out == "trades\n7\n"


def test_every_readers_connection_reads_the_lake_and_nothing_else(landed: Lake, tmp_path: Path) -> None:
    """connect_read_only, which the report and the demo open too: the lake reads; files elsewhere, writes
    elsewhere and the settings that would undo it are refused by DuckDB itself."""
    with views.connect_read_only(landed.root.parent / "warehouse.duckdb", landed) as db:
        assert db.execute("SELECT count(*) FROM raw.trades").fetchone() == (14,)
        with pytest.raises(duckdb.PermissionException, match="/etc/passwd"):
            db.execute("SELECT * FROM read_text('/etc/passwd')")
        with pytest.raises(duckdb.PermissionException, match=r"elsewhere\.csv"):
            db.execute(f"COPY (SELECT 1 AS x) TO '{tmp_path / 'elsewhere.csv'}'")
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            db.execute("SET allowed_directories = ['/']")
        db.execute("SET TimeZone = 'Europe/Paris'")  # the one setting a reader may change
    assert not (tmp_path / "elsewhere.csv").exists()
