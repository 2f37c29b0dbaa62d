"""`pmw normalize`: every recorded fixture becomes Parquet of its table's schema; unreadable input is a clear
message and exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipeline.cli.main import main
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES
from pmw_sandbox import SandboxApp, sandbox_client
from tests.support.native_cases import CASES, FIXTURES, Case, load


def normalize(*args: str | Path) -> int:
    return main(["normalize", *map(str, args)])


@pytest.mark.parametrize("case", CASES, ids=[c.path for c in CASES])
def test_every_fixture_becomes_parquet_of_its_tables(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.parquet"
    assert normalize("--platform", case.platform, "--entity", case.entity, FIXTURES / case.path, "-o", out) == 0
    printed = capsys.readouterr().out
    for table, count in case.rows.items():
        path = out if table == case.entity else tmp_path / f"out.{table}.parquet"
        if table != case.entity and count == 0:
            assert not path.exists()
            continue
        rows = pl.read_parquet(path)
        assert rows.schema == TABLES[table].polars_schema and rows.height == count
        assert f"{table}: {count} row(s) -> {path}" in printed
    assert not list(tmp_path.glob("*rejects*"))


def test_a_recording_gives_its_fetch_time_and_context(tmp_path: Path) -> None:
    out = tmp_path / "candles.parquet"
    fixture = FIXTURES / "kalshi/series_candlesticks_response.json"  # its _metadata says period_interval=1440
    assert normalize("--platform", "kalshi", "--entity", "price_history", fixture, "-o", out) == 0
    rows = pl.read_parquet(out)
    recorded = datetime(2026, 1, 12, 22, 8, 10, 949333, tzinfo=UTC)
    assert rows["_fetched_at"].unique().to_list() == [recorded]
    assert rows["date"].unique().to_list() == [recorded.date()]
    assert rows["timestamp"][0] == datetime(2025, 10, 14, 4, tzinfo=UTC)


def test_context_and_partition_options(tmp_path: Path) -> None:
    body, _ = load("kalshi/series_candlesticks_response.json")
    bare = tmp_path / "candles.json"
    bare.write_bytes(orjson.dumps(body))
    out = tmp_path / "candles.parquet"
    args = ("--platform", "kalshi", "--entity", "price_history", bare, "-o", out)
    assert normalize(*args, "--context", "period_interval=60", "--day", "2025-10-15") == 0
    rows = pl.read_parquet(out)
    assert rows["timestamp"][0] == datetime(2025, 10, 15, 3, tzinfo=UTC)
    assert rows["date"].unique().to_list() == [datetime(2025, 10, 15).date()]


def test_rejects_are_written_beside_and_printed_and_a_stale_file_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body, _ = load("kalshi/event_single_response.json")
    market = body["markets"][0]
    hostile = tmp_path / "markets.json"
    hostile.write_bytes(orjson.dumps({"markets": [market, {**market, "ticker": None}]}))
    out = tmp_path / "markets.parquet"
    assert normalize("--platform", "kalshi", "--entity", "markets", hostile, "-o", out) == 0
    rejects = pl.read_parquet(tmp_path / "markets.rejects.parquet")
    assert rejects.schema == REJECTS_SCHEMA and rejects["reason"].to_list() == ["missing required field 'ticker'"]
    assert pl.read_parquet(out).height == 1
    printed = capsys.readouterr().out
    assert "markets: 1 reject(s)" in printed and "1 x missing required field 'ticker'" in printed
    hostile.write_bytes(orjson.dumps({"markets": [market]}))
    assert normalize("--platform", "kalshi", "--entity", "markets", hostile, "-o", out) == 0
    assert not (tmp_path / "markets.rejects.parquet").exists()


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (None, ("--platform", "kalshi", "--entity", "markets"), "cannot read"),
        (
            b'[{"id": "1557558", "question": "Bitcoin',
            ("--platform", "polymarket", "--entity", "markets"),
            "is not valid JSON (truncated?)",
        ),
        (b"", ("--platform", "polymarket", "--entity", "markets"), "is not valid JSON"),
        (
            (FIXTURES / "kalshi/orderbook_response.json").read_bytes(),
            ("--platform", "kalshi", "--entity", "markets"),
            'kalshi markets: expected an object with "markets" (an array) or "market" (an object), got dict',
        ),
        (
            b'{"candlesticks": []}',
            ("--platform", "kalshi", "--entity", "price_history"),
            "kalshi price_history: context needs period_interval",
        ),
        (
            b'{"history": []}',
            ("--platform", "polymarket", "--entity", "price_history"),
            "context needs market_id, outcome_id",
        ),
        (
            b'{"markets": {}}',
            ("--platform", "kalshi", "--entity", "markets", "--source", "api"),
            "expected a unified-API response with a 'markets' array, got dict",
        ),
    ],
)
def test_unreadable_input_is_a_message_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, args: tuple[str, ...], message: str
) -> None:
    source = tmp_path / "input.json"
    if content is not None:
        source.write_bytes(content)
    out = tmp_path / "out.parquet"
    assert normalize(*args, source, "-o", out) == 2
    error = capsys.readouterr().err
    assert error.startswith("pmw normalize: ") and message in error and error.count("\n") == 1
    assert not out.exists()


def test_an_unwritable_output_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("not a directory")
    fixture = FIXTURES / "kalshi/trades_list_response.json"
    assert normalize("--platform", "kalshi", "--entity", "trades", fixture, "-o", tmp_path / "file/out.parquet") == 2
    assert capsys.readouterr().err.startswith("pmw normalize: ")


def test_a_truncated_file_prints_no_traceback(tmp_path: Path) -> None:
    truncated = tmp_path / "event.json"
    truncated.write_bytes((FIXTURES / "polymarket/gamma_event.json").read_bytes()[:5000])
    command = [sys.executable, "-m", "pipeline.cli.main", "normalize", "--platform", "polymarket", "--entity", "events"]
    done = subprocess.run([*command, str(truncated), "-o", str(tmp_path / "o.parquet")], capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "is not valid JSON (truncated?)" in done.stderr


def test_the_unified_api_source_reads_the_envelope(shared_app: SandboxApp, tmp_path: Path) -> None:
    with sandbox_client(shared_app) as client:
        page = client.get("/markets", params={"platform": "kalshi", "limit": 7}).json()
    saved = tmp_path / "markets.json"
    saved.write_bytes(orjson.dumps(page))
    out = tmp_path / "markets.parquet"
    assert normalize("--platform", "kalshi", "--entity", "markets", "--source", "api", saved, "-o", out) == 0
    rows = pl.read_parquet(out)
    assert rows.schema == TABLES["markets"].polars_schema and rows.height == 7
    assert rows["_source"].unique().to_list() == ["api"]
    assert rows["id"].to_list() == [m["id"] for m in page["markets"]]


def test_kalshi_batch_and_event_candlesticks_are_read(tmp_path: Path) -> None:
    """Issue 22, point 13: `pmw normalize` refused both answers ("expected an object with \"candlesticks\"")."""
    body, _ = load("kalshi/series_candlesticks_response.json")
    candles = body["candlesticks"][-2:]
    answers = {
        "batch": {"markets": [{"market_ticker": "KXA-1", "candlesticks": candles}]},
        "event": {"market_tickers": ["KXA-1"], "market_candlesticks": [candles], "adjusted_end_ts": 0},
    }
    for name, answer in answers.items():
        path, out = tmp_path / f"{name}.json", tmp_path / f"{name}.parquet"
        path.write_bytes(orjson.dumps(answer))
        args = ("--platform", "kalshi", "--entity", "price_history", path, "-o", out)
        assert normalize(*args, "--context", "period_interval=1440") == 0, name
        assert pl.read_parquet(out)["market_id"].to_list() == ["KXA-1", "KXA-1"]
