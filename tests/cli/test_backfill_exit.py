"""The issue's done-when, through the command line: a backfill where one trade is priced 1.5 lands the
partition whole, reports `prices_in_unit_interval` as failed with that trade as an example, and `pmw
backfill` exits non-zero naming it. The API is the sandbox on 127.0.0.1 behind the hostile server, which
rewrites that one price on its way to the client."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.cli.backfill import partitions as backfill
from pipeline.cli.main import main
from pipeline.engine.lake.store import Lake
from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig
from tests.support.hostile import Answer, Fault, HostileServer, Request, no_fault

PLATFORM = "polymarket"
DAY = date(2026, 11, 20)
KEY = "sk-test-backfill-exit"
# About 40 requests: one platform, one day, a dozen markets.
WORLD = WorldConfig(seed=3, end=DAY, days=2, series_per_platform=2, events_per_series=2, markets_per_event=3,
                    trades_per_market_day=200, multivariate_markets=1)
DAY_START = datetime.combine(DAY, datetime.min.time(), UTC).timestamp()
DAY_END = DAY_START + timedelta(days=1).total_seconds()


class OneTradeAt1_5:
    """Rewrites the price of the first trade of the day in the first /trades answer that holds one to 1.5."""

    def __init__(self) -> None:
        self.trade_id: str | None = None

    def __call__(self, request: Request, answer: Answer) -> Answer:
        if self.trade_id is not None or request.path != "/trades" or answer.status != 200:
            return answer
        body = answer.json()
        trade = next((t for t in body.get("trades", []) if DAY_START <= t["timestamp"] < DAY_END), None)
        if trade is None:
            return answer
        trade["price"], self.trade_id = 1.5, str(trade["trade_id"])
        return answer.with_json(body)


def _backfill(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data_dir: Path,
              fault: Fault) -> tuple[int, list[str], dg.DagsterInstance]:
    """`pmw backfill` of the partition against the sandbox behind `fault`: (exit code, lines printed, the
    Dagster instance its runs were recorded in)."""
    app = SandboxApp(SandboxConfig(world=WORLD, api_keys=(KEY,)))
    instance = dg.DagsterInstance.ephemeral()  # stands for the data dir's instance (cheaper), kept to read back
    monkeypatch.setattr(backfill, "pmw_instance", lambda data_dir: instance)
    for name, value in {"PMW_SOURCE": "api", "PMW_API_KEY": KEY, "PMW_DATA_DIR": str(data_dir),
                        "PMW_RATE_LIMIT_PER_MIN": "1000000"}.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    with HostileServer(app, fault) as server:
        monkeypatch.setenv("PMW_API_URL", server.url)
        code = main(["backfill", "--platform", PLATFORM, "--start", DAY.isoformat(), "--no-models"])
    return code, capsys.readouterr().out.splitlines(), instance


def _landed_trades(data_dir: Path) -> pl.DataFrame:
    trades = Lake(data_dir / "lake").read_partition("trades", PLATFORM, DAY)
    assert trades is not None, "the trades partition did not land"
    return trades


def _check_evaluations(instance: dg.DagsterInstance, check: str) -> list[dg.AssetCheckEvaluation]:
    events = [e for run in instance.get_runs() for e in instance.all_logs(run.run_id)]
    evaluations = [e.dagster_event.asset_check_evaluation_data for e in events if e.dagster_event is not None
                   and e.dagster_event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION]
    return [e for e in evaluations if f"{e.asset_key.to_user_string()}.{e.check_name}" == check]


def test_one_trade_priced_1_5_lands_whole_is_reported_and_fails_the_backfill(
    pipeline_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_code, clean_lines, _ = _backfill(monkeypatch, capsys, tmp_path / "clean", no_fault)
    assert clean_code == 0, clean_lines
    assert not any(line.startswith("FAILED") for line in clean_lines), clean_lines
    clean = _landed_trades(tmp_path / "clean")

    fault = OneTradeAt1_5()
    code, lines, instance = _backfill(monkeypatch, capsys, tmp_path / "faulty", fault)
    assert fault.trade_id is not None, "no /trades answer held a trade of the day"

    assert code == 1, lines
    assert lines[-1] == f"FAILED CHECK trades.prices_in_unit_interval {PLATFORM} {DAY}: 1 violation(s)", lines
    assert not any(line.startswith("FAILED PARTITION") for line in lines), lines
    trades = _landed_trades(tmp_path / "faulty")
    assert trades.height == clean.height  # every trade landed, the 1.5 one too
    assert trades.filter(pl.col("trade_id") == fault.trade_id)["price"].to_list() == [1.5]
    assert clean.filter(pl.col("trade_id") == fault.trade_id)["price"].to_list() != [1.5]
    [evaluation] = _check_evaluations(instance, "trades.prices_in_unit_interval")
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["violations"].value == 1
    assert [e["trade_id"] for e in evaluation.metadata["examples"].value] == [fault.trade_id]


def test_the_exit_status_is_documented_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["backfill", "--help"])
    assert exit_.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 every partition landed and no check of severity ERROR failed" in shown
    assert "1 a partition failed or a check of severity ERROR failed" in shown


def test_a_backfill_onto_a_broken_disk_says_one_line_a_partition_and_no_stack_trace(
    pipeline_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every write fails (the lake's folder is a file, as on a disk that refuses writes; a data dir that is a file
    is refused before anything runs): each partition's line names the step, the error and the path; Dagster's
    90-line errors with stack traces stay behind --verbose."""
    pipeline_env.mkdir(parents=True)
    blocker = pipeline_env / "lake"
    blocker.write_text("")
    days = ["--start", (DAY - timedelta(days=1)).isoformat(), "--end", DAY.isoformat()]
    capsys.readouterr()
    assert main(["backfill", "--platform", "polymarket,kalshi", *days]) == 1
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if not line.startswith("progress: ")]  # stderr's progress
    assert "Traceback" not in out + err and "Stack Trace" not in out + err, (out + err)[:2000]
    failed = [line for line in lines if line.startswith("FAILED PARTITION")]
    assert len(failed) == 4 and all("NotADirectoryError" in line and str(blocker) in line for line in failed)
    assert len(lines) == 4 + 1 + 4, lines  # a line per partition as it ends, the requests, a line per failure

    assert main(["backfill", "--platform", "polymarket", "--start", DAY.isoformat(), "--verbose"]) == 1
    assert "Stack Trace" in "".join(capsys.readouterr())


def test_a_partition_line_names_the_markets_not_read_back_to_the_days_start() -> None:
    """The coverage warning that Dagster's console used to print is in the partition's own line."""
    report = backfill.PartitionReport(PLATFORM, DAY, success=True, rows={"trades": 10}, incomplete={"trades": 3})
    assert report.line().endswith("; trades incomplete: 3 market(s) not read back to the day's start")
