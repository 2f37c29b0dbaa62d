"""One host of tests/reliability/test_shared_budget.py's three, told what to do on its input, a line at a time:
`STORE_URL API_URL REQUESTS PER_WINDOW WINDOW_S MARGIN_S` opens the budget kept at STORE_URL and answers `ready`;
`go` then sends REQUESTS requests to the API (its key in PMW_API_KEY), each after taking its place in the budget,
and answers with the HTTP statuses it got on one line. So the hosts start together, once, for every store."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx

from pipeline.engine.config import Secret
from pipeline.engine.sources.budget_store import BudgetStore
from pipeline.engine.sources.request_budget import RequestBudget


def _run(store_url: str, api_url: str, requests: str, per_window: str, window_s: str, margin_s: str) -> str:
    store = BudgetStore.of(Secret(store_url), Path("unused"))
    budget = RequestBudget("hosts", int(per_window), store, window_s=float(window_s), margin_s=float(margin_s))
    statuses = []
    with httpx.Client(base_url=api_url, headers={"X-API-Key": os.environ["PMW_API_KEY"]}) as client:
        print("ready", flush=True)
        sys.stdin.readline()
        for _ in range(int(requests)):
            budget.acquire()
            statuses.append(str(client.get("/health").status_code))
    budget.close()
    return " ".join(statuses)


if __name__ == "__main__":
    for line in sys.stdin:
        print(_run(*line.split()), flush=True)
