"""A partition is never replaced by less without a reason (issue "Nothing lost", point 1).

An API that answers 200 with empty catalogues after a good run (an outage page that keeps the envelope, an API
URL pointing at an empty environment) must leave every landed partition as it was and make `pmw backfill`
exit non-zero naming the problem; `--allow-shrink` lands the empty day when that is what is wanted. The API is
the sandbox on 127.0.0.1 behind the hostile server (tests/support/hostile.py).
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig
from tests.reliability.test_faults import empty_catalogue
from tests.support.hostile import Fault, HostileServer, no_fault

END = date(2026, 11, 20)
DAYS = [END - timedelta(days=1), END]
PLATFORMS = ("polymarket", "kalshi")
KEY = "sk-test-nothing-lost"
# A small world: what is refused or landed is a whole listing, whatever its size.
WORLD = WorldConfig(seed=3, end=END, days=3, series_per_platform=1, events_per_series=2, markets_per_event=2,
                    trades_per_market_day=10, multivariate_markets=1)


def _backfill(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data_dir: Path, fault: Fault,
              *options: str, days: list[date] = DAYS) -> tuple[int, str]:
    """`pmw backfill` of both platforms over `days` against the sandbox behind `fault`: (exit code, output)."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    for name, value in {"PMW_SOURCE": "api", "PMW_API_KEY": KEY, "PMW_DATA_DIR": str(data_dir),
                        "PMW_RATE_LIMIT_DB": str(data_dir.parent / "budget.sqlite"),
                        "PMW_RATE_LIMIT_PER_MIN": "1000000", "PMW_MAX_BACKOFF_S": "0.01"}.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    with HostileServer(SandboxApp(SandboxConfig(world=WORLD, api_keys=(KEY,))), fault) as server:
        monkeypatch.setenv("PMW_API_URL", server.url)
        code = main(["backfill", "--platform", ",".join(PLATFORMS), "--start", days[0].isoformat(),
                     "--end", days[-1].isoformat(), "--no-models", *options])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _files(data_dir: Path) -> dict[str, bytes]:
    """The five tables' files and their rejects (`platform_status` gains an observation every run, by design)."""
    return {str(p.relative_to(data_dir)): p.read_bytes() for p in sorted((data_dir / "lake").rglob("*.parquet"))
            if "platform_status" not in p.parts}


@pytest.mark.slow
def test_empty_catalogues_after_a_good_run_leave_every_partition_intact_and_fail_the_backfill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    assert _backfill(monkeypatch, capsys, data_dir, no_fault)[0] == 0
    before = _files(data_dir)
    assert len([f for f in before if "_rejects" not in f]) == len(TABLES) * len(PLATFORMS) * len(DAYS)

    code, said = _backfill(monkeypatch, capsys, data_dir, empty_catalogue)

    assert code == 1
    assert _files(data_dir) == before
    for platform in PLATFORMS:
        for day in DAYS:
            assert f"markets {platform} {day}: the markets listing came back empty" in said, said


@pytest.mark.slow
def test_allow_shrink_lands_the_empty_day_on_purpose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    assert _backfill(monkeypatch, capsys, data_dir, no_fault, days=[END])[0] == 0

    code, said = _backfill(monkeypatch, capsys, data_dir, empty_catalogue, "--allow-shrink", days=[END])

    assert code == 0, said
    lake = Lake(data_dir / "lake")
    for platform in PLATFORMS:
        assert lake.row_count("markets", platform, END) == 0
        assert lake.row_count("trades", platform, END) == 0


@pytest.mark.slow
def test_an_empty_listing_on_a_new_day_is_refused_when_the_platform_had_markets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    assert _backfill(monkeypatch, capsys, data_dir, no_fault, days=[DAYS[0]])[0] == 0

    code, said = _backfill(monkeypatch, capsys, data_dir, empty_catalogue, days=[END])

    assert code == 1
    lake = Lake(data_dir / "lake")
    for platform in PLATFORMS:
        held = lake.row_count("markets", platform, DAYS[0])
        assert f"the lake holds {held} markets of {platform} on {DAYS[0]}" in said, said
        assert lake.row_count("markets", platform, END) is None
