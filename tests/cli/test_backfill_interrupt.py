"""The issue's done-when for Ctrl-C: `pmw backfill` of four partitions, in a pseudo-terminal, gets a Ctrl-C while its
second partition runs; it ends within 10 s with exit 130 naming the three partitions not finished, every landed
file reads back whole and no temporary is left; `pmw backfill --missing` then lands those three and rewrites
nothing of the first. SIGTERM ends it with 143."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from pipeline.cli.backfill import partitions
from pipeline.cli.backfill.partitions import PartitionReport
from pipeline.cli.backfill.remaining import Planned, not_landed
from pipeline.cli.main import main
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from pmw_sandbox import plug
from tests.support.paths import REPO_ROOT
from tests.support.world import PIPELINE_WORLD, pipeline_sandbox

YESTERDAY = datetime.now(UTC).date() - timedelta(days=1)
DAYS = (YESTERDAY - timedelta(days=1), YESTERDAY)
PLATFORMS = ("polymarket", "kalshi")  # run day by day: polymarket then kalshi, whose first partition sweeps its days
ARGS = ["backfill", "--platform", ",".join(PLATFORMS), "--start", DAYS[0].isoformat(), "--end", DAYS[1].isoformat()]
# `pmw` over the tests' small sandbox world (as the pipeline_env fixture gives in-process)
PMW = [sys.executable, "-c", "import sys; from pmw_sandbox import plug; from tests.support.world import "
       "pipeline_sandbox; plug.sandbox_app = pipeline_sandbox; from pipeline.cli.main import main; "
       "sys.exit(main(sys.argv[1:]))"]
STARTS_WITHIN_S = 90.0  # until the first partition has landed (imports and a sweep of the API, on a busy machine)
STOPS_WITHIN_S = 10.0


def _env(data_dir: Path, faults: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_"))}
    return {**env, "PYTHONPATH": str(REPO_ROOT), "PMW_SOURCE": "sandbox", "PMW_DATA_DIR": str(data_dir),
            "PMW_SANDBOX_DAYS": "2", "PMW_SANDBOX_FAULTS": faults, "PMW_MAX_BACKOFF_S": "0.01",
            "PMW_RATE_LIMIT_DB": str(data_dir.parent / "budget.sqlite")}


def _read(fd: int, until: float) -> bytes:
    """What the terminal shows before `until` (monotonic) or the end of the process's output."""
    out = b""
    while (left := until - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        out += chunk
    return out


def _ctrl_c_after_first_partition(env: dict[str, str]) -> tuple[int, str, float]:
    """`pmw backfill` in a pseudo-terminal, Ctrl-C typed once its first partition has landed: (exit status, what
    the terminal showed, seconds from the Ctrl-C to the exit)."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the backfill, with the pseudo-terminal as its controlling terminal
        os.execve(sys.executable, [*PMW, *ARGS], env)
    try:
        shown = b""
        deadline = time.monotonic() + STARTS_WITHIN_S
        while b"[1/4]" not in shown and time.monotonic() < deadline:
            shown += _read(terminal, min(deadline, time.monotonic() + 0.2))
        assert b"[1/4]" in shown, shown.decode(errors="replace")[-2000:]
        os.write(terminal, b"\x03")  # Ctrl-C: the terminal sends SIGINT to the backfill
        typed = time.monotonic()
        shown += _read(terminal, typed + STOPS_WITHIN_S)
        while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < typed + STOPS_WITHIN_S:
            time.sleep(0.05)
        stopped_after = time.monotonic() - typed
        if ended[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"still running {STOPS_WITHIN_S:g} s after Ctrl-C: {shown.decode(errors='replace')[-2000:]}")
        return os.waitstatus_to_exitcode(ended[1]), shown.decode(errors="replace"), stopped_after
    finally:
        os.close(terminal)


def _files(lake_root: Path, platform: str, day: date) -> dict[Path, int]:
    return {path: path.stat().st_mtime_ns for path in lake_root.rglob("*.parquet")
            if f"platform={platform}" in path.parts and f"date={day}" in path.parts}


@pytest.mark.slow
def test_ctrl_c_stops_the_backfill_names_what_is_left_and_missing_lands_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    code, shown, stopped_after = _ctrl_c_after_first_partition(_env(data_dir, faults="latency_ms=30"))

    assert code == 130, shown[-2000:]
    assert stopped_after < STOPS_WITHIN_S
    lines = [line.strip() for line in shown.replace("\r", "\n").splitlines()]
    not_finished = [line for line in lines if line.startswith("NOT FINISHED")]
    assert [line.split(":")[0] for line in not_finished] == [
        f"NOT FINISHED kalshi {DAYS[0]}", f"NOT FINISHED polymarket {DAYS[1]}", f"NOT FINISHED kalshi {DAYS[1]}"]
    command = f"pmw backfill --platform polymarket,kalshi --start {DAYS[0]} --end {DAYS[1]} --missing"
    assert f"pmw backfill: stopped by SIGINT: 3 partition(s) not finished; {command} lands them" in lines
    assert not any(line.startswith("FAILED") for line in lines), shown[-2000:]
    assert "Traceback" not in shown

    for name in [name for name in os.environ if name.startswith(("PMW_", "DAGSTER_"))]:
        monkeypatch.delenv(name)
    for name, value in _env(data_dir).items():  # then `pmw verify` and the rerun in this process, saving starts
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(plug, "sandbox_app", pipeline_sandbox)
    capsys.readouterr()
    assert main(["verify"]) == 0, capsys.readouterr().out
    assert not list(data_dir.rglob("*.tmp")), "an interrupted write left its temporary"
    first = _files(data_dir / "lake", "polymarket", DAYS[0])
    assert len(first) >= len(TABLES)

    assert main([*ARGS, "--missing"]) == 0, capsys.readouterr()
    rerun = capsys.readouterr().out
    assert "--missing: 1 partition(s) already landed, skipped; 3 to run" in rerun
    assert [line.split(":")[0] for line in rerun.splitlines() if line.startswith("[")] == [
        f"[1/3] kalshi {DAYS[0]}", f"[2/3] polymarket {DAYS[1]}", f"[3/3] kalshi {DAYS[1]}"]
    assert _files(data_dir / "lake", "polymarket", DAYS[0]) == first  # nothing landed twice
    lake = Lake.of(Settings.from_env())
    for table in TABLES:
        assert {(p, d) for p, d in lake.partitions(table)} == {(p, d) for p in PLATFORMS for d in DAYS}, table


def test_a_sigterm_ends_pmw_backfill_with_143_naming_what_is_left(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM (Dagster's handler takes it for SIGINT) during the first of two partitions, whose run Dagster then
    ends failed: the backfill tells the signals apart, stops and leaves the handlers it found."""
    def terminated(keys: list[dg.AssetKey], platform: str, day: date, *_: object) -> PartitionReport:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # Python notes the signal as it comes; its handler runs between two instructions
        return PartitionReport(platform, day, success=False, error="DagsterExecutionInterruptedError")

    monkeypatch.setattr(partitions, "materialise_partition", terminated)
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    day = PIPELINE_WORLD.end_day.isoformat()
    capsys.readouterr()
    assert main(["backfill", "--platform", "polymarket,kalshi", "--start", day]) == 143
    out, err = capsys.readouterr()
    assert out.splitlines()[-2:] == [f"NOT FINISHED polymarket {day}: interrupted; {', '.join(TABLES)} not landed",
                                     f"NOT FINISHED kalshi {day}: not started"]
    command = f"pmw backfill --platform polymarket,kalshi --start {day} --end {day} --missing"
    said = f"pmw backfill: stopped by SIGTERM: 2 partition(s) not finished; {command} lands them"
    assert err.splitlines()[-1] == said
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == handlers


def test_missing_runs_only_the_tables_that_have_not_landed(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    landed = lake.partition_path("markets", "kalshi", DAYS[0])
    Path(str(landed)).parent.mkdir(parents=True)
    Path(str(landed)).write_bytes(b"")  # a landed partition's file: its name is what the lake lists
    keys = [dg.AssetKey("markets"), dg.AssetKey("trades")]
    planned = [Planned("kalshi", DAYS[0], keys), Planned("kalshi", DAYS[1], keys)]
    assert not_landed(lake, planned) == [Planned("kalshi", DAYS[0], [dg.AssetKey("trades")]), planned[1]]
