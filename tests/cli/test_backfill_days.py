"""`pmw backfill` of a day that has no partition (today, a future day, a day before PMW_START_DATE) ends with one
line naming the day and the days that exist, exit status 2, before any run (issue "Nothing lost", point 12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.support.world import PIPELINE_WORLD

TODAY = datetime.now(UTC).date()
YESTERDAY = TODAY - timedelta(days=1)
WORLD_START = PIPELINE_WORLD.start_day  # the world of `pipeline_env`, whose end is PMW_SANDBOX_END


@pytest.mark.parametrize(("start", "end", "said"), [
    (TODAY, TODAY, f"--end {TODAY} has no partition yet: the last is yesterday, {YESTERDAY}"),
    (YESTERDAY, TODAY + timedelta(days=3), f"--end {TODAY + timedelta(days=3)} has no partition yet"),
    (WORLD_START - timedelta(days=1), YESTERDAY,  # by default the partitions start at the sandbox world's first day
     f"--start {WORLD_START - timedelta(days=1)} is before the first partition, {WORLD_START} (PMW_START_DATE)"),
])
def test_a_day_without_a_partition_is_refused_in_one_line(
    start: object, end: object, said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    pipeline_env: Path,
) -> None:
    monkeypatch.delenv("PMW_START_DATE", raising=False)
    code = main(["backfill", "--platform", "kalshi", "--start", str(start), "--end", str(end)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith(f"pmw backfill: {said}")
    assert "Traceback" not in captured.err + captured.out
    assert len(captured.err.strip().splitlines()) == 1
    assert not pipeline_env.exists(), "nothing may run"
