"""The peers benchmark's own machinery, without dlt (tests never install it): the requests counted per API key,
a command measured from outside, and a benchmark that cannot run saying so in one line and exiting 1."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import httpx
import pytest

import benchmarks.__main__ as bench
from benchmarks.child import ChildFailed, run_measured
from benchmarks.peers import CountingApp
from benchmarks.report import BenchmarkUnavailable
from pmw_sandbox.app import SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.server import SandboxServer


def test_the_sandbox_counts_each_tools_requests_by_its_api_key() -> None:
    app = CountingApp(SandboxConfig(world=WorldConfig(seed=7, end=date(2026, 11, 21), days=1)))
    with SandboxServer(app, port=0) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        for key, times in (("sandbox-key", 2), ("sandbox-key-2", 1)):
            for _ in range(times):
                assert client.get("/health/", headers={"X-API-Key": key}).status_code == 200
    assert app.counts == {"sandbox-key": {"/health": 2}, "sandbox-key-2": {"/health": 1}}


def test_a_measured_command_reports_its_own_peak_memory_and_output(tmp_path: Path) -> None:
    grow = "block = bytearray(200 * 2**20); block[::4096] = b'x' * len(block[::4096]); print('done')"
    measured = run_measured([sys.executable, "-c", grow], env={}, deadline_s=60, scratch=tmp_path)
    assert measured.stdout == "done\n"
    assert measured.peak_rss_mb >= 200
    with pytest.raises(ChildFailed, match="still running after 1 s: killed"):
        run_measured([sys.executable, "-c", "import time; time.sleep(30)"], env={}, deadline_s=1, scratch=tmp_path)


def test_a_measured_command_does_not_count_the_runners_own_memory(tmp_path: Path) -> None:
    """A child's peak RSS starts at its parent's resident set when forked: the catalogue's backfill, measured after
    the queries benchmark had grown the runner, reported 1,100 MB where it used about 400."""
    runner = bytearray(400 * 2**20)
    runner[::4096] = b"x" * len(runner[::4096])
    measured = run_measured([sys.executable, "-c", "print('done')"], env={}, deadline_s=60, scratch=tmp_path)
    assert measured.peak_rss_mb < 100, measured
    with pytest.raises(ChildFailed, match=r"failed \(exit 3\)"):
        run_measured([sys.executable, "-c", "raise SystemExit(3)"], env={}, deadline_s=60, scratch=tmp_path)


def test_a_benchmark_that_cannot_run_says_so_in_one_line_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unavailable(quick: bool, workdir: Path) -> bench.Report:
        raise BenchmarkUnavailable("cannot install dlt into the venv: no network")

    monkeypatch.setitem(bench.BENCHMARKS, "peers", unavailable)
    assert bench.run(quick=True, only=["peers"], results=tmp_path / "results.json", workdir=tmp_path) == 1
    assert capsys.readouterr().err == "peers: cannot run: cannot install dlt into the venv: no network\n"
    assert not (tmp_path / "results.json").exists()
