"""The strict budget: a day's ingestion and snapshot rounds at once, against the sandbox served on loopback
with its 100-requests-a-window limit (the real API's 100 a minute, in a window of a second here), share the
machine's one request budget: no 429 is met, and each round costs exactly one request per market of its list.
Rounds are hourly, and a day's ingestion takes minutes: here two rounds of both platforms overlap it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from pipeline.engine.config import Settings
from pipeline.engine.schema import Platform
from pipeline.engine.sources.factory import open_unified_source
from pipeline.engine.sources.orderbooks import take_round
from pmw_sandbox import SandboxApp, SandboxConfig
from pmw_sandbox.world import shared_world
from tests.support.loopback import LoopbackServer
from tests.support.runs import DAY, DirectRun, land_directly
from tests.support.world import STRICT_BUDGET, strict_budget_world

SECRET = "sk-sandbox-ROUNDS-0b1d2e"
WORLD = strict_budget_world(DAY)
WINDOW_S = 1.0  # the server's window; the pipeline's budget stretches it by its 2 s margin
ROUND_MARKETS = 20
ROUNDS = 2
INGESTED = "kalshi"  # a day of Kalshi (33 requests) and the rounds (80) need more than one window of 100


@pytest.mark.slow
def test_ingestion_and_rounds_of_20_markets_share_the_budget_without_a_429(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = SandboxApp(SandboxConfig.strict(world=WORLD, api_keys=(SECRET,), rate_window_s=WINDOW_S))
    lists = {p.value: [m.id for m in shared_world(WORLD).markets(p)][:ROUND_MARKETS]
             for p in (Platform.POLYMARKET, Platform.KALSHI)}
    with LoopbackServer(app) as server:
        for name in ("PMW_PLATFORMS", "PMW_SANDBOX_FAULTS", "DAGSTER_HOME", "PMW_ORDERBOOK_WATCHLIST"):
            monkeypatch.delenv(name, raising=False)
        for name, value in {"PMW_SOURCE": "api", "PMW_API_URL": server.url, "PMW_API_KEY": SECRET,
                            "PMW_DATA_DIR": str(tmp_path / "data"), "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.db"),
                            "PMW_RATE_LIMIT_PER_MIN": str(STRICT_BUDGET), "PMW_RATE_WINDOW_S": str(WINDOW_S)}.items():
            monkeypatch.setenv(name, value)
        settings = Settings.from_env()
        daily: dict[str, DirectRun] = {}
        round_requests: list[int] = []
        took: dict[str, float] = {}

        def ingest() -> None:
            started = time.perf_counter()
            daily[INGESTED] = land_directly(INGESTED)
            took["daily"] = time.perf_counter() - started

        def take_rounds() -> None:
            started = time.perf_counter()
            for _ in range(ROUNDS):
                for platform, ids in lists.items():
                    with open_unified_source(settings) as unified:
                        answers = take_round(unified.http, platform, ids)
                        assert len(answers) == len(ids)
                        round_requests.append(unified.http.stats.requests)
            took["rounds"] = time.perf_counter() - started

        workers = [threading.Thread(target=ingest), threading.Thread(target=take_rounds)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=240)
    assert all(run.success for run in daily.values()), {p: r.failures() for p, r in daily.items()}
    blocking = [c for run in daily.values() for c in run.checks.values() if c.severity.value == "ERROR"]
    assert blocking and all(check.passed for check in blocking)
    assert round_requests == [ROUND_MARKETS] * (ROUNDS * len(lists))  # N + watch list requests a round, no more
    assert app.requests_served > STRICT_BUDGET, "the test must need more than one window of the budget"
    assert app.rate_limited_answers == 0, "the shared budget let a 429 through"
    print(f"strict budget: {app.requests_served} requests ({sum(round_requests)} of snapshot rounds), 0 answered "
          f"429; daily ingestion {took['daily']:.1f} s, rounds {took['rounds']:.1f} s")
