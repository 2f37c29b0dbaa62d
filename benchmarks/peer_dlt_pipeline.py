"""The peer of benchmarks/peers.py: dlt's `rest_api` source over the unified API, configured as a user would.

Run by the python of dlt's own virtual environment (benchmarks/.data/dlt-venv), not ours, so it imports
nothing of pm-warehouse: ``python peer_dlt_pipeline.py ARGUMENTS.json`` with the API's URL and key, the
platform, the window (Unix seconds, start included, end excluded) and where the pipeline keeps its state
and its DuckDB file. It prints one JSON line: the rows landed per table.

The configuration is what dlt's documentation shows for such an API: the markets listed with the cursor
paginator, and two dependent resources resolving each market's id, its trades (cursor paginated, newest
first, `taker_only=true`, an incremental on the trade's time bounded to the window, which stops a market's
paging at the first trade before the window) and its hourly price history over the window (one answer a
market); DuckDB as the destination.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import dlt
from dlt.sources.rest_api import rest_api_source

HOURLY = 60  # minutes a price point covers, as pmw asks them
TABLES = ("markets", "trades", "price_history")


def source(base_url: str, api_key: str, platform: str, start: int, end: int) -> Any:
    cursor = {"type": "cursor", "cursor_path": "pagination.next_cursor", "cursor_param": "cursor"}
    market_id = "{resources.markets.id}"  # a dependent resource: one request (or paging) per listed market
    return rest_api_source({
        "client": {
            "base_url": base_url,
            "auth": {"type": "api_key", "name": "X-API-Key", "api_key": api_key, "location": "header"},
        },
        "resources": [
            {
                "name": "markets",
                "primary_key": "id",
                "endpoint": {"path": "markets", "params": {"platform": platform, "limit": 250},
                             "data_selector": "markets", "paginator": cursor},
            },
            {
                "name": "trades",
                "primary_key": "trade_id",
                "endpoint": {
                    "path": "trades",
                    "params": {"market_id": market_id, "taker_only": "true", "limit": 1000},
                    "data_selector": "trades",
                    "paginator": cursor,
                    "incremental": {"cursor_path": "timestamp", "initial_value": start, "end_value": end,
                                    "row_order": "desc"},
                },
            },
            {
                "name": "price_history",
                "endpoint": {
                    "path": "price-history",
                    "params": {"market_ids": market_id, "start_ts": start, "end_ts": end - 1, "interval": HOURLY,
                               "limit": 5000},
                    "data_selector": "data",
                    "paginator": "single_page",
                },
            },
        ],
    })


def main(arguments_path: str) -> None:
    arguments = json.loads(Path(arguments_path).read_text())
    pipeline = dlt.pipeline(
        pipeline_name="peer",
        pipelines_dir=arguments["pipelines_dir"],
        destination=dlt.destinations.duckdb(arguments["database"]),
        dataset_name="polymarket",
    )
    pipeline.run(source(arguments["base_url"], arguments["api_key"], arguments["platform"], arguments["start"],
                        arguments["end"]))
    with pipeline.sql_client() as client:
        rows = {table: client.execute_sql(f"select count(*) from {table}")[0][0] for table in TABLES}
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1])
