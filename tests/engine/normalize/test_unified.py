"""The unified-API normalizer: sandbox records become rows of the exact schema; anything else a clear reject."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import polars as pl
import pytest

from pipeline.engine.normalize.unified import normalize
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES, Platform
from pmw_sandbox import Faults, SandboxApp, SandboxConfig, sandbox_client
from tests.support.world import WORLD

Record = dict[str, Any]
DAY = WORLD.end
FETCHED_AT = datetime(2026, 11, 22, 1, 2, 3, tzinfo=UTC)
START_TS, END_TS = 1795046400, 1795305600  # 2026-11-19 .. 2026-11-22 00:00 UTC


def fetch(app: SandboxApp) -> dict[str, list[Record]]:
    """A few pages of every resource, from both platforms, as the unified API sends them."""
    records: dict[str, list[Record]] = {table: [] for table in TABLES}
    with sandbox_client(app) as client:
        for platform in ("polymarket", "kalshi"):
            listing = {"platform": platform, "limit": 100}
            markets = client.get("/markets", params=listing).json()["markets"]
            records["markets"] += markets
            records["series"] += client.get("/series", params=listing).json()["series"]
            records["events"] += client.get("/events", params=listing).json()["events"]
            records["trades"] += client.get("/trades", params={"market_id": markets[0]["id"], "limit": 300}).json()[
                "trades"
            ]
            history = {"market_ids": f"{markets[0]['id']},{markets[1]['id']}", "start_ts": START_TS, "end_ts": END_TS}
            records["price_history"] += client.get("/price-history", params={**history, "interval": 60}).json()["data"]
    return records


@pytest.fixture(scope="module")
def sandbox(shared_app: SandboxApp) -> dict[str, list[Record]]:
    return fetch(shared_app)


def run(table: str, records: list[Any], platform: str = "polymarket") -> Normalized:
    return normalize(table, records, platform=platform, day=DAY, source="sandbox", fetched_at=FETCHED_AT)


def one_row(table: str, record: Record) -> Record:
    result = run(table, [record])
    assert result.rejects.is_empty(), result.rejects["reason"].to_list()
    return result.rows.row(0, named=True)


# -- sandbox records --------------------------------------------------------------------------------------


@pytest.mark.parametrize("table", list(TABLES))
def test_sandbox_records_become_rows_of_the_exact_schema(sandbox: dict[str, list[Record]], table: str) -> None:
    records = sandbox[table]
    result = run(table, records)
    assert len(records) > 10
    assert result.rejects.is_empty(), result.rejects["reason"].to_list()[:3]
    assert result.rows.schema == TABLES[table].polars_schema
    assert result.rows.height == len(records)
    assert result.rejects.schema == REJECTS_SCHEMA
    lineage = result.rows.select("date", "_source", "_fetched_at").unique().rows()
    assert lineage == [(DAY, "sandbox", FETCHED_AT)]
    assert set(result.rows["platform"]) == {"polymarket", "kalshi"}  # the records' own, not the partition's


def test_records_keep_their_order_and_values(sandbox: dict[str, list[Record]]) -> None:
    trades = sandbox["trades"]
    rows = run("trades", trades).rows
    assert rows["trade_id"].to_list() == [t["trade_id"] for t in trades]
    assert rows["price"].to_list() == [t["price"] for t in trades]
    assert rows["user"].struct.field("pseudonym").to_list() == [t["user"]["pseudonym"] for t in trades]


def test_unix_seconds_become_utc_timestamps_and_milliseconds_are_refused(sandbox: dict[str, list[Record]]) -> None:
    trade = sandbox["trades"][0]
    expected = datetime.fromtimestamp(trade["timestamp"], UTC)
    assert one_row("trades", trade)["timestamp"] == expected
    in_milliseconds = run("trades", [{**trade, "timestamp": trade["timestamp"] * 1000 + 250}])
    assert in_milliseconds.rows.is_empty()
    [reason] = in_milliseconds.rejects["reason"].to_list()
    assert "timestamp" in reason and "milliseconds" in reason
    assert one_row("trades", {**trade, "timestamp": trade["timestamp"] + 0.5})["timestamp"] == expected + (
        timedelta(milliseconds=500)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-21T21:00:00Z", datetime(2026, 11, 21, 21, tzinfo=UTC)),
        ("2026-11-21T21:00:00+00:00", datetime(2026, 11, 21, 21, tzinfo=UTC)),
        ("2026-11-21T23:00:00+02:00", datetime(2026, 11, 21, 21, tzinfo=UTC)),
        ("2026-01-12T22:08:10.446961Z", datetime(2026, 1, 12, 22, 8, 10, 446961, tzinfo=UTC)),
        ("2026-11-21t21:00:00z", datetime(2026, 11, 21, 21, tzinfo=UTC)),  # RFC 3339 5.6: either case
        ("2026-11-21t23:00:00.5+02:00", datetime(2026, 11, 21, 21, 0, 0, 500000, tzinfo=UTC)),
    ],
)
def test_iso_times_become_utc_timestamps(sandbox: dict[str, list[Record]], text: str, expected: datetime) -> None:
    market = copy.deepcopy(sandbox["markets"][0])
    market["created_at"] = text
    next(iter(market["last_trades"].values()))["timestamp"] = text
    row = one_row("markets", market)
    assert row["created_at"] == expected
    assert row["last_trades"][0]["timestamp"] == expected
    assert row["created_at"].tzinfo is not None


def test_maps_become_lists_of_key_value_structs_in_key_order(sandbox: dict[str, list[Record]]) -> None:
    market = copy.deepcopy(sandbox["markets"][0])
    market["current_prices"] = {"no": {"price": 0.4, "bid": 0.39, "ask": 0.41}, "yes": {"price": 0.6}}
    market["price_24h_changes"] = {"yes": 0.01, "no": -0.01}
    row = one_row("markets", market)
    assert row["current_prices"] == [
        {"key": "no", "price": 0.4, "bid": 0.39, "ask": 0.41},
        {"key": "yes", "price": 0.6, "bid": None, "ask": None},
    ]
    assert row["price_24h_changes"] == [{"key": "yes", "value": 0.01}, {"key": "no", "value": -0.01}]


def test_price_maps_keyed_by_outcome_name_are_stored_by_outcome_id_and_a_stray_key_is_kept(
        sandbox: dict[str, list[Record]]) -> None:
    kalshi = copy.deepcopy(next(m for m in sandbox["markets"] if m["platform"] == "kalshi"))
    kalshi["current_prices"] = {"Yes": {"price": 0.6, "bid": 0.59, "ask": 0.61}, "No": {"price": 0.4}}
    kalshi["price_24h_changes"] = {"No": -0.01, "yes": 0.01}  # by name and by id, in one map
    kalshi["price_7d_changes"] = {"Maybe": 0.02}  # names no outcome: kept as sent, for the check to report
    kalshi["last_trades"] = None
    twins = copy.deepcopy(kalshi)  # two outcomes of one name: the name names neither
    twins["id"], twins["outcomes"] = "TWINS", [{"id": "a", "name": "Same"}, {"id": "b", "name": "Same"}]
    twins["current_prices"], twins["price_24h_changes"], twins["price_7d_changes"] = {"Same": {"price": 0.5}}, {}, None
    result = run("markets", [kalshi, twins], platform="kalshi")
    assert result.rejects.is_empty()
    row, twin = result.rows.to_dicts()
    assert row["current_prices"] == [{"key": "yes", "price": 0.6, "bid": 0.59, "ask": 0.61},
                                     {"key": "no", "price": 0.4, "bid": None, "ask": None}]
    assert row["price_24h_changes"] == [{"key": "no", "value": -0.01}, {"key": "yes", "value": 0.01}]
    assert row["price_7d_changes"] == [{"key": "Maybe", "value": 0.02}]
    assert row["last_trades"] is None
    assert twin["current_prices"] == [{"key": "Same", "price": 0.5, "bid": None, "ask": None}]
    assert twin["price_24h_changes"] == [] and twin["price_7d_changes"] is None


def test_a_map_keyed_by_name_in_one_market_among_markets_keyed_by_id_is_still_matched(
        sandbox: dict[str, list[Record]]) -> None:
    by_id = [copy.deepcopy(m) for m in sandbox["markets"] if m["platform"] == "kalshi"][:3]
    by_name = copy.deepcopy(by_id[0])
    by_name["id"], by_name["last_trades"] = "BY-NAME", {"No": by_name["last_trades"]["no"]}
    no_outcomes = copy.deepcopy(by_id[0])
    no_outcomes["id"], no_outcomes["outcomes"], no_outcomes["price_24h_changes"] = "BARE", [], {"yes": 0.01}
    result = run("markets", [*by_id, by_name, no_outcomes], platform="kalshi")
    assert result.rejects.is_empty()
    rows = {row["id"]: row for row in result.rows.to_dicts()}
    assert rows["BY-NAME"]["last_trades"][0]["key"] == "no"
    assert rows["BARE"]["price_24h_changes"] == [{"key": "yes", "value": 0.01}]
    for market in by_id:
        assert [e["key"] for e in rows[market["id"]]["current_prices"]] == list(market["current_prices"])


def test_nested_objects_become_structs_with_snake_case_fields(sandbox: dict[str, list[Record]]) -> None:
    point = sandbox["price_history"][0]
    row = one_row("price_history", point)
    assert (row["market_id"], row["outcome_id"], row["open_interest"]) == (
        point["marketId"],
        point["outcomeId"],
        point["openInterest"],
    )
    assert row["price"] == {k: point["price"][k] for k in ("open", "high", "low", "close")}
    assert row["bid_ask"]["ask"]["close"] == point["bidAsk"]["ask"]["close"]
    polymarket = next(m for m in sandbox["markets"] if m["platform"] == "polymarket")
    metadata = one_row("markets", polymarket)["metadata"]
    assert metadata["clob_token_ids"] == polymarket["metadata"]["clobTokenIds"]
    assert metadata["condition_id"] == polymarket["metadata"]["conditionId"]


def test_free_form_metadata_is_kept_as_its_json_text(sandbox: dict[str, list[Record]]) -> None:
    trade = sandbox["trades"][0]
    metadata = {"z": 1, "a": [1.5, None, "é"], "nested": {"k": True}}
    rows = run("trades", [{**trade, "metadata": metadata}, {**trade, "metadata": None}, trade]).rows
    assert rows["metadata"].to_list() == [
        '{"z":1,"a":[1.5,null,"é"],"nested":{"k":true}}',
        None,
        orjson.dumps(trade["metadata"]).decode(),
    ]


def test_null_objects_and_arrays_stay_null(sandbox: dict[str, list[Record]]) -> None:
    trade, market = sandbox["trades"][0], sandbox["markets"][0]
    trades = run("trades", [{**trade, "user": None}, trade]).rows
    assert trades["user"].to_list() == [None, trade["user"]]
    row = one_row("markets", {**market, "tags": None, "last_trades": None, "metadata": None})
    assert (row["tags"], row["last_trades"], row["metadata"]) == (None, None, None)


def test_an_empty_batch_gives_empty_frames_of_the_schemas() -> None:
    for table in TABLES:
        result = run(table, [])
        assert result.rows.schema == TABLES[table].polars_schema and result.rows.is_empty()
        assert result.rejects.schema == REJECTS_SCHEMA and result.rejects.is_empty()


def test_batches_larger_than_a_block_are_whole_and_in_order(sandbox: dict[str, list[Record]]) -> None:
    trade = sandbox["trades"][0]
    records: list[Any] = [{**trade, "trade_id": str(i), "user": None if i % 3 else trade["user"]} for i in range(5000)]
    wrong = {10: {**records[10], "price": "bad"}, 3000: "garbage", 4321: {**records[4321], "taker": "yes"}}
    for i, record in wrong.items():
        records[i] = record
    result = run("trades", records)
    kept = [i for i in range(5000) if i not in wrong]
    assert result.rows["trade_id"].to_list() == [str(i) for i in kept]
    assert result.rows["user"].null_count() == sum(1 for i in kept if i % 3)
    assert result.rejects["reason"].to_list() == [
        "field 'price': expected a number, got str 'bad'",
        "record is not a JSON object: got str 'garbage'",
        "field 'taker': expected a boolean, got str 'yes'",
    ]


# -- what the normalizer keeps for the checks to judge ------------------------------------------------------


def test_values_for_the_checks_to_judge_are_kept(sandbox: dict[str, list[Record]]) -> None:
    trade, market = sandbox["trades"][0], sandbox["markets"][0]
    huge = "Ωé漢字🙂" * 50_000
    trades = run(
        "trades",
        [{**trade, "price": math.nan}, {**trade, "price": -1.5}, {**trade, "outcome": huge}, {**trade, "side": ""}],
        platform="kalshi",
    )
    assert trades.rejects.is_empty()
    assert math.isnan(trades.rows["price"][0]) and trades.rows["price"][1] == -1.5
    assert trades.rows["outcome"][2] == huge
    assert set(trades.rows["platform"]) == {trade["platform"]}  # another partition's platform is not relabelled
    assert one_row("markets", {**market, "status": "weird"})["status"] == "weird"
    assert one_row("markets", {**market, "platform": "weird"})["platform"] == "weird"


def test_unknown_fields_are_ignored(shared_app: SandboxApp) -> None:
    faulty = SandboxApp(SandboxConfig(world=WORLD, faults=Faults(unknown_fields=True)))
    records = fetch(faulty)
    assert all("x_sandbox_unknown" in r for rs in records.values() for r in rs)
    with sandbox_client(shared_app) as client:
        nested = {"platform": "kalshi", "limit": 5, "include_nested": "true", "include_raw": "true"}
        records["series"] += client.get("/series", params=nested).json()["series"]
        records["markets"] += client.get("/markets", params=nested).json()["markets"]
        with_markets = {**nested, "with_nested_markets": "true"}
        records["events"] += client.get("/events", params=with_markets).json()["events"]
    assert any("events" in r and "_raw" in r for r in records["series"])
    assert any("markets" in r and "_raw" in r for r in records["events"])
    for table, rows in records.items():
        result = run(table, rows)
        assert result.rejects.is_empty() and result.rows.height == len(rows)
        assert result.rows.schema == TABLES[table].polars_schema


def test_a_str_subclass_counts_as_a_string_on_both_paths(sandbox: dict[str, list[Record]]) -> None:
    trade = {**sandbox["trades"][0], "platform": Platform.KALSHI}
    assert run("trades", [trade]).rows["platform"].to_list() == ["kalshi"]
    mixed = run("trades", [trade, {**trade, "price": "bad"}])  # a wrong type sends the batch to the slow path
    assert mixed.rows["platform"].to_list() == ["kalshi"] and mixed.rejects.height == 1


# -- rejects ------------------------------------------------------------------------------------------------

Mutation = Callable[[Record], None]


def locate(record: Record, path: str) -> tuple[Any, Any]:
    """The container and key at a dotted path: `user.name`, `outcomes.0.id`, `current_prices.*.price`."""
    *parents, last = path.split(".")
    container: Any = record
    for part in parents:
        container = container[key_in(container, part)]
    return container, key_in(container, last)


def key_in(container: Any, part: str) -> Any:
    if part == "*":  # a map's first key
        return next(iter(container))
    return int(part) if part.isdigit() else part


def setter(path: str, value: Any) -> Mutation:
    def mutate(record: Record) -> None:
        container, key = locate(record, path)
        container[key] = value

    return mutate


def dropper(path: str) -> Mutation:
    def mutate(record: Record) -> None:
        container, key = locate(record, path)
        del container[key]

    return mutate


REJECTS = [
    ("trades", dropper("trade_id"), "missing required field 'trade_id'"),
    ("trades", setter("trade_id", None), "missing required field 'trade_id'"),
    ("trades", dropper("platform"), "missing required field 'platform'"),
    ("trades", setter("price", "abc"), "field 'price': expected a number, got str 'abc'"),
    ("trades", setter("price", "0.5"), "field 'price': expected a number, got str '0.5'"),
    ("trades", setter("price", True), "field 'price': expected a number, got bool True"),
    ("trades", setter("size", [1]), "field 'size': expected a number, got list [1]"),
    ("trades", setter("trade_id", 7), "field 'trade_id': expected a string, got int 7"),
    ("trades", setter("taker", 1), "field 'taker': expected a boolean, got int 1"),
    (
        "trades",
        setter("timestamp", "yesterday"),
        "field 'timestamp': expected a Unix time (a number), got str 'yesterday'",
    ),
    ("trades", setter("timestamp", 1e20), "field 'timestamp': not a Unix time: 1e+20"),
    ("trades", setter("timestamp", math.nan), "field 'timestamp': not a Unix time: NaN"),
    ("trades", setter("user", "bob"), "field 'user': expected an object, got str 'bob'"),
    ("trades", setter("user", ["a", "b", "c"]), "field 'user': expected an object, got list ['a', 'b', 'c']"),
    ("trades", setter("user.name", 5), "field 'user.name': expected a string, got int 5"),
    ("trades", setter("metadata", "x"), "field 'metadata': expected an object, got str 'x'"),
    ("trades", setter("metadata", {1: 2}), "field 'metadata': not writable as JSON: Dict key must be str"),
    ("trades", setter("price", 2**1100), "field 'price': number out of range: int 1358298529049385849277351"),
    ("trades", setter("side", "\ud800"), "field 'side': not valid Unicode text: str '\\ud800'"),
    ("markets", dropper("outcomes.0.id"), "missing required field 'outcomes[].id'"),
    ("markets", setter("outcomes.0", None), "missing required field 'outcomes[].id'"),
    ("markets", setter("outcomes.0", "Yes"), "field 'outcomes[]': expected an object, got str 'Yes'"),
    ("markets", dropper("current_prices.*.price"), "missing required field 'current_prices{}.price'"),
    ("markets", setter("current_prices.*.price", "0.5"), "field 'current_prices{}.price': expected a number"),
    ("markets", setter("current_prices", [0.5]), "field 'current_prices': expected an object, got list [0.5]"),
    ("markets", setter("price_24h_changes.*", False), "field 'price_24h_changes{}': expected a number, got bool"),
    ("markets", setter("tags.0", 3), "field 'tags[]': expected a string, got int 3"),
    ("markets", setter("metadata.clobTokenIds", "abc"), "field 'metadata.clobTokenIds': expected an array"),
    ("markets", setter("status", None), "missing required field 'status'"),
    ("markets", setter("created_at", "yesterday"), "field 'created_at': not an ISO-8601 time with a UTC offset: 'yes"),
    ("markets", setter("created_at", "2026-11-21T21:00:00"), "field 'created_at': not an ISO-8601 time with a UTC"),
    ("markets", setter("last_trades.*.timestamp", "soon"), "field 'last_trades{}.timestamp': not an ISO-8601 time"),
    ("events", setter("title", None), "missing required field 'title'"),
    ("series", setter("last_synced_at", 1795046400), "field 'last_synced_at': expected an ISO-8601 time (a string)"),
    ("price_history", dropper("marketId"), "missing required field 'marketId'"),
    ("price_history", dropper("price"), "missing required field 'price'"),
    ("price_history", setter("bidAsk.ask.close", "x"), "field 'bidAsk.ask.close': expected a number, got str 'x'"),
]


@pytest.mark.parametrize(("table", "mutate", "reason"), REJECTS, ids=[r[2][:60] for r in REJECTS])
def test_a_bad_record_is_rejected_with_its_reason_and_others_kept(
    sandbox: dict[str, list[Record]], table: str, mutate: Mutation, reason: str
) -> None:
    good = sandbox[table][:3]
    bad = copy.deepcopy(sandbox[table][0])
    mutate(bad)
    result = run(table, [good[0], bad, *good[1:]])
    assert result.rows.height == 3 and result.rows.schema == TABLES[table].polars_schema
    assert result.rejects.height == 1
    assert result.rejects["reason"][0].startswith(reason)
    assert result.rejects["_fetched_at"][0] == FETCHED_AT


@pytest.mark.parametrize("record", ["a string", None, [1, 2], 42, 1.5, True])
def test_a_record_that_is_not_an_object_is_rejected(sandbox: dict[str, list[Record]], record: Any) -> None:
    result = run("trades", [sandbox["trades"][0], record])
    assert result.rows.height == 1
    assert result.rejects.rows() == [(orjson.dumps(record).decode(), result.rejects["reason"][0], FETCHED_AT)]
    assert result.rejects["reason"][0].startswith("record is not a JSON object: got ")


def test_a_reject_carries_the_whole_record_as_json(sandbox: dict[str, list[Record]]) -> None:
    bad = {**sandbox["trades"][0], "price": "abc", "x_sandbox_unknown": {"note": "kept in the raw text"}}
    raw = run("trades", [bad]).rejects["raw"][0]
    assert orjson.loads(raw) == bad


def test_the_sandbox_malformed_trade_is_the_only_reject() -> None:
    faulty = SandboxApp(SandboxConfig(world=WORLD, faults=Faults(malformed_record=True)))
    trades = fetch(faulty)["trades"]
    result = run("trades", trades)
    assert result.rows.height == len(trades) - 1
    assert result.rejects["reason"].to_list() == ["field 'price': expected a number, got str 'not-a-price'"]


def test_every_record_becomes_a_row_or_a_reject(sandbox: dict[str, list[Record]]) -> None:
    trade, point = sandbox["trades"][0], sandbox["price_history"][0]
    hostile: list[Any] = [
        trade,
        {},
        {**trade, "price": None},
        {**trade, "price": math.nan, "size": -3.0},
        {**trade, "price": math.inf},
        {**trade, "timestamp": -1},
        {**trade, "timestamp": 2**70},
        {**trade, "outcome": "\x00\n" + "é" * 10_000},
        {**trade, "user": {}},
        {**trade, "user": {"name": None, "extra": [1, {"deep": True}]}},
        {**trade, "metadata": {"n": math.nan, "when": datetime(2026, 1, 1, tzinfo=UTC)}},
        {**trade, "taker": None, "side": None, "transaction_hash": None},
        {**trade, "trade_id": ["list"]},
        {**trade, "market_id": {"id": 1}},
        {"trade_id": 1, "price": "1", "timestamp": "1"},
        {k: None for k in trade},
        "garbage",
        None,
        point,
    ]
    for table in ("trades", "price_history"):
        for batch in (hostile, hostile[::-1], hostile * 3):
            result = run(table, batch)
            assert result.rows.height + result.rejects.height == len(batch)
            assert result.rows.schema == TABLES[table].polars_schema
            assert result.rejects["reason"].null_count() == 0


# -- the interface ------------------------------------------------------------------------------------------


def test_an_unknown_table_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown table 'trade'.*series, events, markets, trades, price_history"):
        run("trade", [])


def test_fetched_at_must_be_aware_and_is_stored_in_utc(sandbox: dict[str, list[Record]]) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        normalize("trades", [], platform="kalshi", day=DAY, source="sandbox", fetched_at=datetime(2026, 11, 22))
    paris = FETCHED_AT.astimezone(timezone(timedelta(hours=1)))
    rows = normalize("trades", sandbox["trades"][:1], platform="kalshi", day=DAY, source="api", fetched_at=paris).rows
    assert rows["_fetched_at"].to_list() == [FETCHED_AT] and rows["_source"].to_list() == ["api"]


def test_polars_builds_flat_string_and_boolean_columns_strictly() -> None:
    """The builder relies on this for strings and booleans, and checks numbers itself because of the last case:
    if polars changes here, `_scalar_series` must change too."""
    for dtype, wrong in ((pl.String, [1, 1.5, True, {"a": 1}, [1]]), (pl.Boolean, [1, 0.0, "true", {}, []])):
        for value in wrong:
            with pytest.raises(TypeError):
                pl.Series([None, value], dtype=dtype, strict=True)
    assert pl.Series([True], dtype=pl.Float64, strict=True).to_list() == [1.0]
