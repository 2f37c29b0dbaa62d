"""The sports engine without Dagster: the normalizer (rows belong to what was asked, wrong records rejected with the
reason), the odds checks (each can fail), and the source against every sandbox reading of the sports endpoints."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.checks import CHECKS, PartitionContext, run_checks
from pipeline.engine.config import Secret
from pipeline.engine.normalize.partitions.sports import SportsSource
from pipeline.engine.normalize.sports import Lineage, normalize_odds, normalize_records
from pipeline.engine.raw_pages import Detail
from pipeline.engine.schema import FUTURE_ODDS, OddsKind
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.sports import SportsAnswers
from pmw_sandbox import SandboxApp, SandboxConfig, SandboxTransport
from pmw_sandbox.app import DEFAULT_API_KEYS
from pmw_sandbox.readings import Readings
from pmw_sandbox.transport import SANDBOX_BASE_URL
from tests.support.world import WORLD

DAY = WORLD.end_day
LINEAGE = Lineage("nba", DAY, "sandbox", datetime(2026, 11, 21, 12, tzinfo=UTC))
TEAMS = frozenset({"nba-bos", "nba-chi"})


def _outcome(name: str, team: str | None, american: Any, decimal: Any, implied: Any) -> dict[str, Any]:
    return {"outcome_name": name, "odds": {"american": american, "decimal": decimal, "implied_probability": implied},
            "team_router_id": team, "volume_24h": 10.0, "last_trade_price": None, "metadata": {}}


def _detail(*outcomes: dict[str, Any], platform: str = "kalshi", asked: str = "nba-2026-championship") -> Detail:
    record = {"id": "what-the-server-says", "markets": [{"platform": platform, "market_id": "KXNBA",
                                                         "outcomes": list(outcomes)}]}
    return Detail("future", asked, record)


FAIR_BOOK = (_outcome("Boston", "nba-bos", "+100", 2.0, 0.5), _outcome("Chicago", "nba-chi", "-125", 1.8, 0.555556))


def _failed(rows: pl.DataFrame) -> set[str]:
    outcomes = run_checks("future_odds", rows, PartitionContext("nba", DAY, team_ids=TEAMS), pl.DataFrame())
    return {o.name for o in outcomes if not o.passed}


def test_odds_rows_belong_to_the_detail_asked_and_keep_american_odds_signed() -> None:
    result = normalize_odds([_detail(*FAIR_BOOK[:1], _outcome("Chicago", "nba-chi", "100", 2.0, 0.5))], LINEAGE)
    rows = result.rows
    assert rows.schema == FUTURE_ODDS.polars_schema and result.rejects.is_empty()
    assert set(rows["future_id"]) == {"nba-2026-championship"} and set(rows["kind"]) == {"future"}
    assert rows["american_odds"].to_list() == ["+100", "+100"]
    assert set(rows["league"]) == {"nba"} and set(rows["date"]) == {DAY}
    assert _failed(rows) == set()


def test_wrong_records_are_rejected_with_the_reason_never_dropped() -> None:
    broken_market = _detail(_outcome("Boston", "nba-bos", "+100", "2.0", 0.5))
    missing = Detail("award", "nba-2026-mvp", {"id": "nba-2026-mvp"}, problem="listed, but no detail (404)")
    result = normalize_odds([broken_market, missing, _detail(*FAIR_BOOK)], LINEAGE)
    assert result.rows.height == 2
    reasons = result.rejects["reason"].to_list()
    assert reasons[0].startswith("future nba-2026-championship: ") and "decimal" in reasons[0]
    assert reasons[1] == "award nba-2026-mvp: listed, but no detail (404)"
    teams = normalize_records("teams", [{"router_id": 7, "name": "x"}, {"name": "no id"}], LINEAGE)
    assert teams.rows.is_empty() and teams.rejects.height == 2


@pytest.mark.parametrize(
    ("outcome", "failing"),
    [
        (_outcome("Chicago", "nba-chi", "-125", 1.8, 0.7), {"implied_probability_matches_decimal"}),
        (_outcome("Chicago", "nba-chi", "-125", 1.8, 1.4), {"implied_probability_matches_decimal"}),
        (_outcome("Chicago", "nba-chi", "+300", 1.8, 0.555556), {"american_matches_decimal"}),
        (_outcome("Chicago", "nba-chi", "even", 1.8, 0.555556), {"american_matches_decimal"}),
        (_outcome("Chicago", "nhl-chi", "-125", 1.8, 0.555556), {"team_of_the_league"}),
    ],
)
def test_each_odds_check_reports_what_it_guards(outcome: dict[str, Any], failing: set[str]) -> None:
    rows = normalize_odds([_detail(FAIR_BOOK[0], outcome)], LINEAGE).rows
    assert _failed(rows) == failing


def test_a_book_missing_outcomes_that_matter_is_a_warning_not_a_block() -> None:
    rows = normalize_odds([_detail(FAIR_BOOK[0])], LINEAGE).rows  # Chicago's 55% left out: the book sums to 0.5
    assert _failed(rows) == {"outcomes_cover_the_field"}
    assert not next(c for c in CHECKS["future_odds"] if c.name == "outcomes_cover_the_field").blocking


def _source(readings: Readings) -> SportsSource:
    app = SandboxApp(SandboxConfig(world=WORLD, readings=readings))
    http = HttpLayer(SANDBOX_BASE_URL, transport=SandboxTransport(app), api_key=Secret(DEFAULT_API_KEYS[0]))
    return SportsSource(SportsAnswers(http), "sandbox")


def _landed(source: SportsSource) -> dict[str, pl.DataFrame]:
    found = source.league("nhl", DAY)
    futures, awards = source.listed("futures", "nhl", DAY), source.listed("awards", "nhl", DAY)
    asked = {OddsKind.FUTURE: futures.rows["id"].to_list(), OddsKind.AWARD: awards.rows["id"].to_list()}
    odds = source.odds("nhl", DAY, asked)
    tables = {**found, "futures": futures, "awards": awards, "future_odds": odds}
    assert all(result.rejects.is_empty() for result in tables.values())
    return {name: result.rows.drop("_fetched_at").sort(pl.all()) for name, result in tables.items()}


def test_every_reading_of_the_sports_endpoints_lands_the_same_rows() -> None:
    default = _source(Readings())
    expected = _landed(default)
    details = expected["futures"].height + expected["awards"].height
    assert default.requests().requests == 3 + details  # one per list, one per detail
    flipped = _source(Readings(american_odds="bare", award_detail="futures", list_order="reversed",
                               iso_times="offset"))
    landed = _landed(flipped)
    for table, rows in expected.items():
        assert_frame_equal(landed[table], rows)
    # The award path not served costs one request more, the first award's: the others go to /futures/{id} at once.
    assert flipped.requests().requests == 3 + details + 1


def test_a_listed_future_without_a_detail_is_a_reject_naming_it() -> None:
    result = _source(Readings()).odds("nhl", DAY, {OddsKind.FUTURE: ["nhl-2026-gone"]})
    assert result.rows.is_empty()
    assert result.rejects["reason"].to_list() == ["future nhl-2026-gone: listed, but /futures/{id} answered 404 "
                                                  "(not found)"]
