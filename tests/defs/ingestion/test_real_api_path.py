"""PMW_SOURCE=api against the sandbox served on loopback: strict budget, concurrency, secrecy, crashes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import dagster as dg
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.schema import TABLES
from pmw_sandbox import Faults, SandboxApp, SandboxConfig
from pmw_sandbox.server import SandboxServer
from tests.support.loopback import LoopbackServer
from tests.support.runs import DAY, lake_tables, materialise
from tests.support.served import backfill_args, backfill_process, run_backfill_in_process
from tests.support.world import STRICT_BUDGET, strict_budget_env, strict_budget_world, strict_config

SECRET = "sk-sandbox-SECRET-7f3a9c"
SMALL_WORLD = strict_budget_world(DAY)
# The killed run's requests before its kill (a whole run makes about 51): past its first partition (polymarket's, 18),
# inside its second (kalshi's, in flight).
KILLED_AFTER_REQUESTS = 30


@pytest.fixture
def strict_server() -> Iterator[SandboxServer]:
    app = SandboxApp(strict_config(world=SMALL_WORLD, api_keys=(SECRET,)))
    with LoopbackServer(app) as server:
        yield server


def _api_env(server: SandboxServer, data_dir: Path, budget_db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_"))}
    env.update(
        {
            "PMW_SOURCE": "api",
            "PMW_API_URL": server.url,
            "PMW_API_KEY": SECRET,
            "PMW_DATA_DIR": str(data_dir),
            "PMW_RATE_LIMIT_DB": str(budget_db),
            **strict_budget_env(),
        }
    )
    return env


@pytest.mark.slow
def test_two_concurrent_backfills_stay_inside_the_strict_budget(strict_server: SandboxServer, tmp_path: Path) -> None:
    budget = tmp_path / "budget.sqlite"
    with ExitStack() as stack:
        runs = [stack.enter_context(backfill_process(_api_env(strict_server, tmp_path / f"data{i}", budget),
                                                     backfill_args())) for i in range(2)]
        outputs = [run.communicate(timeout=400) for run in runs]
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, out + err
        assert "requests by endpoint: " in out
        assert SECRET not in out + err
    app = strict_server.app
    assert app.rate_limited_answers == 0, "the budget was exceeded"
    assert app.requests_served > STRICT_BUDGET, "the test must need more than one window of budget"
    for table in TABLES:
        for platform in ("polymarket", "kalshi"):
            assert_frame_equal(
                lake_tables(tmp_path / "data0", platform)[table], lake_tables(tmp_path / "data1", platform)[table]
            )


def test_the_api_key_appears_nowhere(
    strict_server: SandboxServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    data_dir, home = tmp_path / "data", tmp_path / "dagster_home"
    home.mkdir()
    for name, value in _api_env(strict_server, data_dir, tmp_path / "budget.sqlite").items():
        if name.startswith("PMW_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with caplog.at_level("DEBUG"), dg.instance_for_test(temp_dir=str(home)) as instance:
        result = materialise("kalshi", instance=instance)
        assert result.success
        events = instance.all_logs(result.run_id)
        assert events and SECRET not in repr(events)
    assert SECRET not in caplog.text
    out, err = capfd.readouterr()
    assert SECRET not in out + err
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "budget.sqlite"]
    assert any(p.suffix == ".parquet" for p in written) and any(p.suffix == ".duckdb" for p in written)
    assert any("event" in p.name or p.suffix == ".db" for p in home.rglob("*"))
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"the key leaked into {path}"


@pytest.mark.slow
def test_a_killed_run_leaves_the_previous_partition_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The previous partitions, landed in this process from the same world without the latency: only the run
    # that is killed needs to be slow.
    with LoopbackServer(SandboxApp(SandboxConfig(world=SMALL_WORLD, api_keys=(SECRET,)))) as server:
        env = {**_api_env(server, tmp_path / "data", tmp_path / "budget.sqlite"), "PMW_RATE_LIMIT_PER_MIN": "100000"}
        assert run_backfill_in_process(env, backfill_args(), monkeypatch) == 0
    before = {p: lake_tables(tmp_path / "data", p) for p in ("polymarket", "kalshi")}
    app = SandboxApp(SandboxConfig(world=SMALL_WORLD, api_keys=(SECRET,), faults=Faults(latency_ms=40)))
    with LoopbackServer(app) as server:
        env = {**_api_env(server, tmp_path / "data", tmp_path / "budget.sqlite"), "PMW_RATE_LIMIT_PER_MIN": "100000",
               "PMW_CATALOGUE_TTL_S": "0"}
        with backfill_process(env, backfill_args()) as second:
            deadline = time.monotonic() + 60
            while app.requests_served < KILLED_AFTER_REQUESTS and second.poll() is None:
                assert time.monotonic() < deadline, "the run never got going"
                time.sleep(0.01)
            os.kill(second.pid, signal.SIGKILL)
            second.communicate(timeout=30)
        assert second.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    for platform, tables in before.items():
        after = lake_tables(tmp_path / "data", platform)
        for table in TABLES:
            assert_frame_equal(tables[table], after[table])
