"""The fault suite: one (platform, day) partition pulled through every fault we know of, compared with the
fault-free pull of the same world.

Each fault runs the five ingestion assets (invoked directly, as a run's steps: tests.support.runs.land_directly)
through the real HTTP layer against the sandbox, served on loopback behind the hostile server
(tests/support/hostile.py) or with the sandbox's own fault switches.
A fault either lets the run land exactly the expected rows (bad records in the rejects area with their
reasons, or flagged by the partition's failing check), or fails the run with a clear error and leaves the
previous partition intact, after which a run without the fault converges. The module prints the summary
table: fault, runs, rows expected, rows landed, rejects, flagged, lost, duplicated.
"""

from __future__ import annotations

import gzip
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from pipeline.engine.lake.store import Lake
from pipeline.engine.normalized import CONFLICTING_REPEAT
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES
from pipeline.engine.sources.liveness import live_records
from pmw_sandbox import Faults, SandboxApp, SandboxConfig, WorldConfig
from tests.support.hostile import Answer, Fault, HostileServer, Request, no_fault
from tests.support.runs import DAY, DirectRun, land_directly
from tests.support.served import print_table

PLATFORM = "polymarket"
WORLD = WorldConfig(seed=3, end=DAY, days=2, series_per_platform=2, events_per_series=2, markets_per_event=3,
                    trades_per_market_day=300, multivariate_markets=1)
HTML = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
GZIP_BOMB = gzip.compress(b" " * (16 << 20), compresslevel=1)
DEEP: Any = "bottom"  # 300 nested lists: deeper than orjson writes (254), as deep as JSON readers take
for _ in range(300):
    DEEP = [DEEP]
HUGE_TITLE = ("Ünïcødé ✓ 漢字 🚀 \u202e ' \" ; -- /../ " * 4_000).strip()
SUMMARY: list[dict[str, Any]] = []


# -- faults ------------------------------------------------------------------------------------------------


def every(n: int, change: Callable[[Request, Answer], Answer], first: int = 1) -> Fault:
    """`change` applied to every n-th request (from request `first` on)."""
    return lambda request, answer: change(request, answer) if request.number >= first and (
        request.number - first) % n == 0 else answer


def html_page(status: int) -> Callable[[Request, Answer], Answer]:
    return lambda _r, _a: Answer(status, HTML, {"content-type": "text/html"})


def cut_mid_body(_request: Request, answer: Answer) -> Answer:
    return Answer(answer.status, answer.body, answer.headers, cut_at=len(answer.body) // 2)


def slow(_request: Request, answer: Answer) -> Answer:
    return Answer(answer.status, answer.body, answer.headers, delay_s=0.8)  # the client times out after 0.5 s


def dripping(_request: Request, answer: Answer) -> Answer:
    """The headers at once, then a byte every 0.05 s: never slower than the timeout, far past the deadline."""
    return Answer(answer.status, answer.body, answer.headers, drip_s=0.05)


def gzip_bomb(_request: Request, answer: Answer) -> Answer:
    """A small gzip answer that inflates to 16 MiB (a page of nothing but spaces)."""
    return Answer(200, GZIP_BOMB, {"content-type": "application/json", "content-encoding": "gzip"})


def half_5xx(request: Request, answer: Answer) -> Answer:
    """500 or 503 to half of the requests, chosen by request number."""
    dice = random.Random(request.number)
    if dice.random() < 0.5:
        return Answer(dice.choice([500, 503]), b'{"error":"injected: unavailable"}', {"Retry-After": "0"})
    return answer


def storm(first: int, length: int) -> Fault:
    """429 to requests first..first+length-1: longer than the client's attempts, so that run gives up."""
    limited = Answer(429, b'{"error":{"code":"RATE_LIMITED","message":"slow down"}}', {"Retry-After": "0"})
    return lambda request, answer: limited if first <= request.number < first + length else answer


Change = Callable[[Request, list[Any], dict[str, Any]], None]


def on_items(path: str, change: Change) -> Fault:
    """`change(request, items, body)` applied in place to every page served at `path`."""
    key = path.strip("/")

    def fault(request: Request, answer: Answer) -> Answer:
        if request.path != path or answer.status != 200:
            return answer
        body = answer.json()
        items = body.get(key)
        if not isinstance(items, list):
            return answer
        change(request, items, body)
        return answer.with_json(body)

    return fault


def on_path(path: str, fault: Fault) -> Fault:
    """`fault` applied to every answer served at `path`."""
    return lambda request, answer: fault(request, answer) if request.path == path else answer


LOOP = "loop-cursor"


def repeating_cursor(path: str) -> Fault:
    """The server says there is more after the first page, then answers that same page and cursor forever."""
    first_page: dict[str, bytes] = {}

    def fault(request: Request, answer: Answer) -> Answer:
        if request.path != path:
            return answer
        if request.query.get("cursor") == LOOP:
            return Answer(200, first_page["body"])
        body = answer.json()
        body["pagination"].update(has_more=True, next_cursor=LOOP)
        first_page["body"] = orjson.dumps(body)
        return answer.with_json(body)

    return fault


def changing_cursor(path: str) -> Fault:
    """The server says there is more after the first page, then answers that same page forever, each time with a
    cursor it has never given: no cursor comes back, only the items do."""
    first_page: dict[str, Any] = {}

    def fault(request: Request, answer: Answer) -> Answer:
        if request.path != path:
            return answer
        cursor = request.query.get("cursor", "")
        if cursor.startswith(LOOP):
            body = {**first_page, "pagination": {**first_page["pagination"], "next_cursor": f"{cursor}+"}}
            return Answer(200, b"", answer.headers).with_json(body)  # the server would refuse the cursor
        body = answer.json()
        body["pagination"].update(has_more=True, next_cursor=f"{LOOP}+")
        first_page.update(body)
        return answer.with_json(body)

    return fault


def empty_page_with_more(_request: Request, items: list[Any], body: dict[str, Any]) -> None:
    """Every page empty, saying there is more behind a cursor the server never issued: paging follows it, the
    server refuses it, and paging restarts from the first page until it gives up."""
    items.clear()
    body["pagination"].update(has_more=True, next_cursor="more-to-come")


CATALOGUE = ("series", "events", "markets")


def empty_catalogue(request: Request, answer: Answer) -> Answer:
    """200 with empty listings of series, events and markets, the paging said to be over: an outage page that
    keeps the envelope, or an API URL pointing at an empty environment. The unified API's lists, the Gamma
    API's bare lists and Kalshi's cursor-paged lists alike."""
    if request.path.rsplit("/", 1)[-1] not in CATALOGUE or answer.status != 200:
        return answer
    body = answer.json()
    if isinstance(body, list):
        return answer.with_json([])
    for key in (*CATALOGUE, "data"):
        if isinstance(body.get(key), list):
            body[key] = []
    if isinstance(body.get("pagination"), dict):
        body["pagination"].update(has_more=False, next_cursor=None, total=0)
    if "cursor" in body:
        body["cursor"] = ""
    return answer.with_json(body)


def prices_as_text(_request: Request, items: list[Any], _body: dict[str, Any]) -> None:
    """Every trade's price sent as a string, which the spec does not allow: every trade is rejected."""
    for record in items:
        record["price"] = str(record["price"])


def reordered(_request: Request, items: list[Any], _body: dict[str, Any]) -> None:
    items.reverse()


def sent_again_otherwise(count: int) -> Fault:
    """The first `count` trades of the day are sent twice, the second time (at the end of their page) at
    another price: a conflicting repeat, whose first version must land and whose second must be rejected."""
    repeated: set[str] = set()

    def change(_request: Request, items: list[Any], _body: dict[str, Any]) -> None:
        for record in list(items):
            if len(repeated) < count and trade_of_the_day(record) and record["trade_id"] not in repeated:
                repeated.add(record["trade_id"])
                items.append({**record, "price": round(abs(record["price"] - 0.01), 4)})

    return on_items("/trades", change)


DAY_START = datetime.combine(DAY, datetime.min.time(), UTC)


def trade_of_the_day(record: dict[str, Any]) -> bool:
    return DAY_START.timestamp() <= record["timestamp"] < (DAY_START + timedelta(days=1)).timestamp()


def market_of_the_day(record: dict[str, Any]) -> bool:
    return bool(live_records([record], DAY))


@dataclass
class Tampering:
    """Records changed on their way to the client: the first records of the partition that pass `wanted`, one
    change each; each record touched is kept as (table, id), so the test knows what to expect of it."""

    table: str
    id_field: str
    wanted: Callable[[dict[str, Any]], bool]
    changes: list[Callable[[dict[str, Any]], None]]
    touched: set[tuple[str, str]] = field(default_factory=set)

    def fault(self, path: str) -> Fault:
        def change(_request: Request, items: list[Any], _body: dict[str, Any]) -> None:
            for record in items:
                if len(self.touched) == len(self.changes):
                    return
                identity = (self.table, str(record[self.id_field]))
                if identity not in self.touched and self.wanted(record):
                    self.changes[len(self.touched)](record)
                    self.touched.add(identity)

        return on_items(path, change)


def setter(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.__setitem__(name, value)


def deleter(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.pop(name, None)


def chain(*faults: Fault) -> Fault:
    def fault(request: Request, answer: Answer) -> Answer:
        for one in faults:
            answer = one(request, answer)
        return answer

    return fault


# -- cases ---------------------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    fault: Fault = no_fault
    sandbox: str = ""  # the sandbox's own fault switches
    env: dict[str, str] = field(default_factory=dict)
    fails_with: str | None = None  # the first run must fail, saying this; a run without the fault converges
    retries_until_success: int = 1  # runs allowed before one must succeed
    rejected: int = 0  # records that must land in the rejects area
    repeated: int = 0  # later versions of records sent twice, that must land in the rejects area
    flagged: dict[str, int] = field(default_factory=dict)  # check name -> violations it must report
    excluded: int = 0  # records the API itself moved out of the partition (e.g. to another day)
    tampering: Tampering | None = None
    same_rows: bool = True  # the landed rows equal the fault-free rows (else only keys are compared)
    source: str = "api"  # PMW_SOURCE: the unified API, or `direct` (the platforms' own APIs)


def _tampered(name: str, table: str, changes: list[Callable[[dict[str, Any]], None]], **expect: Any) -> Case:
    path, id_field, wanted = {"trades": ("/trades", "trade_id", trade_of_the_day),
                              "markets": ("/markets", "id", market_of_the_day)}[table]
    tampering = Tampering(table, id_field, wanted, changes)
    return Case(name, tampering.fault(path), tampering=tampering, same_rows=False, **expect)


FAR_FUTURE = int((datetime.now(UTC) + timedelta(days=3_650)).timestamp())
CASES = [
    Case("5xx, half of all requests (sandbox)", sandbox="error_rate=0.5,seed=4", env={"PMW_MAX_ATTEMPTS": "14"},
         retries_until_success=3),
    Case("429 storm longer than the retries", storm(first=3, length=40), env={"PMW_MAX_ATTEMPTS": "4"},
         fails_with="429"),
    Case("HTML page with status 200", every(4, html_page(200))),
    Case("HTML page with status 502", every(4, html_page(502))),
    Case("connection closed mid-body", every(5, cut_mid_body)),
    Case("slower than the timeout", every(7, slow), env={"PMW_HTTP_TIMEOUT_S": "0.5"}),
    Case("truncated JSON", sandbox="malformed_page_rate=0.2,seed=5"),
    Case("cursor repeating forever", repeating_cursor("/markets"), fails_with="already given"),
    Case("a new cursor every page, the same items forever", changing_cursor("/trades"),
         fails_with="pages in a row brought only items already given"),
    Case("has_more with an empty catalogue page", on_items("/markets", empty_page_with_more),
         fails_with="gave up after 5 restarts"),
    Case("has_more with an empty trades page", on_items("/trades", empty_page_with_more),
         fails_with="gave up after 5 restarts"),
    Case("duplicated items, expired cursors", sandbox="duplicate_items=3,cursor_expiry_rate=0.2,seed=6"),
    Case("reordered items", chain(on_items("/trades", reordered), on_items("/markets", reordered))),
    Case("trades sent twice, the second time at another price", sent_again_otherwise(3), repeated=3,
         flagged={"trades.repeats_agree": 3}),
    Case("unknown fields", sandbox="unknown_fields=true"),
    Case("empty catalogues after a good run", empty_catalogue, fails_with="came back empty"),
    Case("every trade price sent as text", on_items("/trades", prices_as_text), fails_with="rejected"),
    Case("an answer trickling in past the deadline", on_path("/markets", dripping),
         env={"PMW_HTTP_DEADLINE_S": "0.3", "PMW_MAX_ATTEMPTS": "2"}, fails_with="PMW_HTTP_DEADLINE_S"),
    Case("a gzip answer inflating to 16 MiB", on_path("/trades", gzip_bomb), env={"PMW_MAX_BODY_MB": "2"},
         fails_with="PMW_MAX_BODY_MB"),
    *(
        Case(f"{name} (direct)", fault, env=env, fails_with=fails_with, source="direct")
        for name, fault, env, fails_with in [
            ("5xx, half of all requests", half_5xx, {"PMW_MAX_ATTEMPTS": "14"}, None),
            ("429 storm longer than the retries", storm(first=3, length=40), {"PMW_MAX_ATTEMPTS": "4"}, "429"),
            ("HTML page with status 200", every(4, html_page(200)), {}, None),
            ("HTML page with status 502", every(4, html_page(502)), {}, None),
            ("connection closed mid-body", every(5, cut_mid_body), {}, None),
            ("slower than the timeout", every(7, slow), {"PMW_HTTP_TIMEOUT_S": "0.5"}, None),
            ("empty catalogues after a good run", empty_catalogue, {}, "came back empty"),
        ]
    ),
    _tampered("nulls and missing required fields", "trades",
              [setter("price", None), deleter("size"), setter("trade_id", None)], rejected=3),
    _tampered("NaN and values of the wrong type", "trades",
              [setter("price", "NaN"), setter("size", "12.5"), setter("price", True)], rejected=3),
    _tampered("negative and >1 prices", "trades", [setter("price", -0.25), setter("price", 1.5)],
              flagged={"trades.prices_in_unit_interval": 2}),
    _tampered("negative and zero trade sizes", "trades", [setter("size", -12.0), setter("size", 0.0)], rejected=1,
              flagged={"trades.sizes_positive": 1}),
    _tampered("unknown enum values", "markets", [setter("status", "halted"), setter("market_type", "parlay")],
              flagged={"markets.status_enum": 1, "markets.market_type_enum": 1}),
    _tampered("huge, non-ASCII, quote-laden titles", "markets", [setter("title", HUGE_TITLE)]),
    _tampered("a field nested 300 deep in a market", "markets", [setter("extra", DEEP)]),
    _tampered("timestamps outside the day", "trades", [setter("timestamp", FAR_FUTURE)], excluded=1),
]


# -- running ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def summary(request: pytest.FixtureRequest) -> Iterator[list[dict[str, Any]]]:
    yield SUMMARY
    if not SUMMARY:
        return
    columns = ["fault", "runs", "rows expected", "rows landed", "rejects", "flagged", "lost", "duplicated"]
    print_table(request.config, f"Fault suite ({PLATFORM} {DAY}, every table; `(direct)`: PMW_SOURCE=direct):",
                columns, [[row[c] for c in columns] for row in SUMMARY])


def _landed(data_dir: Path) -> dict[str, pl.DataFrame]:
    lake = Lake(data_dir / "lake")
    frames = {}
    for table in TABLES:
        frame = lake.read_partition(table, PLATFORM, DAY)
        assert frame is not None, f"{table} did not land"
        frames[table] = frame.drop("_fetched_at", "last_synced_at", strict=False)
    return frames


def _rejects(data_dir: Path) -> pl.DataFrame:
    lake = Lake(data_dir / "lake")
    found = [pl.DataFrame(schema=REJECTS_SCHEMA)] + [lake.read_rejects(t, PLATFORM, DAY) for t in TABLES]
    return pl.concat([f for f in found if f is not None])


def _run(monkeypatch: pytest.MonkeyPatch, server: HostileServer, data_dir: Path, case: Case) -> DirectRun:
    monkeypatch.setenv("PMW_SOURCE", case.source)
    monkeypatch.setenv("PMW_API_URL", server.url)
    monkeypatch.setenv("PMW_API_KEY", server.app.config.api_keys[0])
    monkeypatch.setenv("PMW_DIRECT_URL", server.url)
    monkeypatch.setenv("PMW_RATE_LIMIT_PER_MIN", "1000000")
    monkeypatch.setenv("PMW_DATA_DIR", str(data_dir))
    for name in ("PMW_MAX_ATTEMPTS", "PMW_HTTP_TIMEOUT_S", "PMW_HTTP_DEADLINE_S", "PMW_MAX_BODY_MB"):
        monkeypatch.delenv(name, raising=False)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    return land_directly(PLATFORM, DAY)


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fault-free partition of each source, landed once."""
    landed = {}
    for source in ("api", "direct"):
        data_dir = tmp_path_factory.mktemp(f"baseline-{source}")
        app = SandboxApp(SandboxConfig(world=WORLD))
        with pytest.MonkeyPatch.context() as monkeypatch, HostileServer(app) as server:
            monkeypatch.setenv("PMW_RATE_LIMIT_DB", str(data_dir / "budget.sqlite"))
            monkeypatch.setenv("PMW_MAX_BACKOFF_S", "0.01")
            result = _run(monkeypatch, server, data_dir, Case("none", source=source))
            assert result.success, result.failures()
        landed[source] = data_dir
    return landed


SLOW_CASES = {"slower than the timeout (direct)"}  # waits out several real half-second timeouts


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.name in SLOW_CASES else []) for c in CASES]
)
def test_a_fault_lands_the_expected_rows_or_fails_cleanly(
    case: Case,
    baselines: dict[str, Path],
    summary: list[dict[str, Any]],
    pipeline_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    baseline = baselines[case.source]
    expected = _landed(baseline)
    data_dir = pipeline_env
    app = SandboxApp(SandboxConfig(world=WORLD, faults=Faults.parse(case.sandbox)))
    runs = 0
    with HostileServer(app, case.fault) as server:
        if case.fails_with:
            shutil.copytree(baseline / "lake", data_dir / "lake")  # a previous, good partition
            before = {t: p.read_bytes() for t in TABLES if (p := Path(Lake(data_dir / "lake").partition_path(
                t, PLATFORM, DAY))).exists()}
            result = _run(monkeypatch, server, data_dir, case)
            runs += 1
            assert not result.success and case.fails_with in result.failures(), result.failures()
            after = {t: Path(Lake(data_dir / "lake").partition_path(t, PLATFORM, DAY)).read_bytes() for t in before}
            assert result.errors, "no asset failed"
            assert all(before[t] == after[t] for t in before if t not in result.landed), "a failed asset changed data"
            server.fault = no_fault  # the API recovers
        for _ in range(case.retries_until_success):
            result = _run(monkeypatch, server, data_dir, case)
            runs += 1
            if result.success:
                break
        assert result.success, result.failures()
    landed, rejects = _landed(data_dir), _rejects(data_dir)
    checks = result.checks
    touched = case.tampering.touched if case.tampering else set()
    row = {"fault": case.name, "runs": runs, "rows expected": 0, "rows landed": 0, "rejects": rejects.height,
           "flagged": sum(case.flagged.values()), "lost": 0, "duplicated": 0}
    for table, frame in landed.items():
        spec = TABLES[table]
        keys = [c for c in spec.primary_key if c not in ("platform", "date")]
        id_column = keys[-1]
        touched_ids = {i for t, i in touched if t == table}
        wanted = expected[table].filter(~pl.col(id_column).is_in(sorted(touched_ids)))
        kept_touched = frame.filter(pl.col(id_column).is_in(sorted(touched_ids)))
        row["rows expected"] += wanted.height + kept_touched.height
        row["rows landed"] += frame.height
        row["duplicated"] += frame.height - frame.unique(keys).height
        row["lost"] += wanted.join(frame, on=keys, how="anti").height
        if case.same_rows:
            assert frame.sort(keys).equals(expected[table].sort(keys)), f"{table}: rows differ from the fault-free run"
    rejected_touched = len(touched) - sum(
        landed[t].filter(pl.col([c for c in TABLES[t].primary_key if c not in ("platform", "date")][-1]) == i).height
        for t, i in touched)
    SUMMARY.append(row)
    assert row["lost"] == 0 and row["duplicated"] == 0, row
    assert rejects.height == case.rejected + case.repeated, rejects.to_dicts()
    assert rejects.filter(pl.col("reason") == CONFLICTING_REPEAT).height == case.repeated
    assert rejected_touched == case.rejected + case.excluded, (rejected_touched, case)
    assert all(reason for reason in rejects["reason"].to_list())
    for name, violations in case.flagged.items():
        assert not checks[name].passed and checks[name].metadata["violations"].value == violations, name
    if case.name.startswith("huge"):
        assert HUGE_TITLE in landed["markets"]["title"].to_list()
