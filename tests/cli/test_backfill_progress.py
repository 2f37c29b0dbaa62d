"""`pmw backfill` in a log (stderr not a terminal): plain progress lines whose figures agree with the partitions'
own lines, while stdout stays as it was. Against the in-process sandbox, markets only, two partitions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.support.runs import DAY

PLATFORMS = ("polymarket", "kalshi")
PROGRESS = re.compile(r"progress: (\d+)/2 partitions done, (\w+) (\S+) (started|running): (\d+) requests "
                      r"\((\d+) in this partition\), \d+ s waited for the request budget, (.+)")
RESULT = re.compile(r"\[(\d)/2\] (\w+) (\S+): markets \d+ rows; 0 rejects; (\d+) requests "
                    r"\(and (\d+) for /health and /platforms\)")


def test_a_backfill_in_a_log_prints_plain_progress_lines_that_agree_with_its_results(
    pipeline_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["backfill", "--platform", ",".join(PLATFORMS), "--start", DAY.isoformat(), "--assets", "markets",
                 "--progress-every", "0.01", "--no-models"])
    captured = capsys.readouterr()
    assert code == 0, captured
    results = [RESULT.fullmatch(line) for line in captured.out.splitlines()[:2]]
    assert all(results), captured.out
    requests = [int(result[4]) + int(result[5]) for result in results if result]  # the data's and the status's
    assert "\r" not in captured.err
    progress = [PROGRESS.fullmatch(line) for line in captured.err.splitlines() if line.startswith("progress: ")]
    assert all(progress), captured.err
    figures = [(int(m[1]), m[2], m[3], m[4], int(m[5]), int(m[6]), m[7]) for m in progress if m]

    started = [f for f in figures if f[3] == "started"]
    assert [f[:3] for f in started] == [(0, "polymarket", str(DAY)), (1, "kalshi", str(DAY))]
    assert started[0][4:] == (0, 0, "time left known after the first partition")
    assert started[1][4:6] == (requests[0], 0), "the run's requests so far are the first partition's"
    assert re.fullmatch(r"about \d+ s left", started[1][6])
    running = [f for f in figures if f[3] == "running"]
    assert running, "a line at least every 0.01 s while a partition runs"
    for done, platform, _, _, in_run, in_partition, _ in running:
        assert in_partition <= requests[done] and in_run == sum(requests[:done]) + in_partition, platform


def test_a_failed_partition_reports_the_requests_it_sent(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every answer cut in half: the first listing fails after its attempts, and the output says it sent them."""
    monkeypatch.setenv("PMW_SANDBOX_FAULTS", "malformed_page_rate=1.0")
    monkeypatch.setenv("PMW_MAX_ATTEMPTS", "3")
    code = main(["backfill", "--platform", "kalshi", "--start", DAY.isoformat(), "--assets", "markets"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("platform status not read (GET /platforms: ")  # no hold, and the runs go ahead
    assert code == 1 and out[1].startswith(f"[1/1] kalshi {DAY}: FAILED: ")
    assert out[2] == "requests by endpoint: /health 6, /platforms 6, /series 3", out  # the hold's and the run's
