"""One host of tests/reliability/test_shared_budget.py's three: `python -m tests.support.budget_host STORE_URL
API_URL REQUESTS PER_WINDOW WINDOW_S MARGIN_S START_AT` takes its place in the budget kept at STORE_URL before each
of REQUESTS requests to the API (its key in PMW_API_KEY), starting at the wall-clock time START_AT so that the
hosts start together, and prints the HTTP statuses it got, one a line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import httpx

from pipeline.engine.config import Secret
from pipeline.engine.sources.budget_store import BudgetStore
from pipeline.engine.sources.request_budget import RequestBudget


def main(store_url: str, api_url: str, requests: str, per_window: str, window_s: str, margin_s: str,
         start_at: str) -> None:
    store = BudgetStore.of(Secret(store_url), Path("unused"))
    budget = RequestBudget("hosts", int(per_window), store, window_s=float(window_s), margin_s=float(margin_s))
    statuses = []
    with httpx.Client(base_url=api_url, headers={"X-API-Key": os.environ["PMW_API_KEY"]}) as client:
        time.sleep(max(0.0, float(start_at) - time.time()))
        for _ in range(int(requests)):
            budget.acquire()
            statuses.append(client.get("/health").status_code)
    budget.close()
    print("\n".join(map(str, statuses)))


if __name__ == "__main__":
    main(*sys.argv[1:])
