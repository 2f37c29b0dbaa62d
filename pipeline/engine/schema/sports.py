"""The sports tables: leagues, teams, futures, awards and their odds, partitioned by league and day, and how far
the sports checks let the odds stray."""

from __future__ import annotations

from enum import StrEnum

import polars as pl

from pipeline.engine.schema.core import SPORTS_PLATFORMS, Field, Table, number, string

# -- sports: leagues, teams, futures, awards and their odds, partitioned by league and day ------------------
# The unified API's sports endpoints (spec: League, Team, Future, Award, PlatformMarkets, Future detail). Each
# partition is the day's snapshot: what the API served when the partition ran (the odds are live, the API
# keeps no history), so a day is landed on that day.

SEASON = (number("year"), string("start_date", doc="YYYY-MM-DD"), string("end_date", doc="YYYY-MM-DD"))
LEAGUE_ENDPOINTS = tuple(
    Field(name, dtype=pl.Boolean()) for name in ("awards", "futures", "games", "list_games", "list_awards",
                                                 "list_futures")
)
LEAGUE_COUNTS = (number("teams"), number("awards"), number("futures"))
# A team's id on each platform that lists it (spec: platform_ids, keys P1, P2, P5, P6, P7).
TEAM_PLATFORM_IDS = tuple(string(p.value) for p in SPORTS_PLATFORMS)
TEAM_METADATA = (
    string("logo_url"), Field("colors", kind="list", dtype=pl.String()), number("founded"), string("stadium")
)
# Each platform's market of a future or award (spec: PlatformMarkets); absent for a platform that lists none.
PLATFORM_MARKETS = (
    Field("polymarket", kind="struct", children=(string("market_id"),
                                                 Field("clob_token_ids", kind="list", dtype=pl.String()))),
    Field("kalshi", kind="struct", children=(string("event_ticker"),)),
    Field("prophetx", kind="struct", children=(string("tournament_id"),)),
    Field("novig", kind="struct", children=(string("market_slug"),)),
    Field("sxbet", kind="struct", children=(number("league_id"),)),
)
FUTURE_METADATA = (string("deadline"), string("description"), Field("eligible_teams", kind="list", dtype=pl.String()))
AWARD_METADATA = (string("deadline"), string("description"), string("eligibility"))
# A future's or award's detail (`/futures/{id}`): its markets, one per platform, each with its outcomes.
FUTURE_ODDS_FIELDS = (
    string("american", required=True, doc="American odds as text: +350, 350 or -200"),
    number("decimal", required=True),
    number("implied_probability", required=True),
)
FUTURE_OUTCOME = (
    string("outcome_name", required=True),
    Field("odds", kind="struct", children=FUTURE_ODDS_FIELDS, required=True),
    string("team_router_id", nullable=True),
    number("volume_24h", nullable=True),
    number("last_trade_price", nullable=True),
    Field("metadata", kind="json"),
)
FUTURE_MARKET = (
    string("platform", required=True, enum=tuple(SPORTS_PLATFORMS)),
    string("market_id", required=True),
    Field("outcomes", kind="list", children=FUTURE_OUTCOME, required=True),
)
TEAM = (
    string("router_id", required=True, doc="the service-wide team id that odds refer to"),
    string("name", required=True),
    string("abbreviation"),
    string("city"),
    Field("platform_ids", kind="struct", children=TEAM_PLATFORM_IDS,
          doc="the team's id on each platform; null where the platform does not list it"),
    Field("metadata", kind="struct", children=TEAM_METADATA),
    string("state"),
    string("conference"),
    string("division"),
)
_LEAGUE_WIRE = string("league", doc="the league code; the stored `league` is the league the pipeline asked for")

LEAGUES = Table(
    name="leagues",
    resource="League",
    doc="The league as `/league-info` describes it on the day: season, endpoints served, counts, status.",
    primary_key=("league", "date", "id"),
    time_column=None,
    sort_key=("id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=(
        string("id", required=True, doc="league code as the API writes it"),
        string("name", required=True),
        string("abbreviation"),
        string("sport"),
        Field("season", kind="struct", children=SEASON),
        Field("endpoints", kind="struct", children=LEAGUE_ENDPOINTS),
        Field("counts", kind="struct", children=LEAGUE_COUNTS),
        string("status"),
    ),
    wire_only=(Field("teams", kind="list", children=TEAM, doc="the league's teams (with include_teams=true), landed "
                                                             "in `teams`"),),
)

TEAMS = Table(
    name="teams",
    resource="Team",
    doc="The league's teams on the day: each team's id on every platform that lists it, conference, division.",
    primary_key=("league", "date", "router_id"),
    time_column=None,
    sort_key=("router_id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=TEAM,
)

FUTURES = Table(
    name="futures",
    resource="Future",
    doc="The league's futures (season-long questions: champion, conference, division) listed on the day, with "
        "each platform's market reference.",
    primary_key=("league", "date", "id"),
    time_column=None,
    sort_key=("id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=(
        string("id", required=True),
        string("future_name", required=True),
        number("season"),
        string("future_type", doc="championship, conference, division, ..."),
        string("category"),
        Field("platform_markets", kind="struct", children=PLATFORM_MARKETS,
              doc="each platform's market; null for a platform that does not list the future"),
        Field("metadata", kind="struct", children=FUTURE_METADATA),
    ),
    wire_only=(_LEAGUE_WIRE,),
)

AWARDS = Table(
    name="awards",
    resource="Award",
    doc="The league's awards (MVP, ...) listed on the day, with each platform's market reference.",
    primary_key=("league", "date", "id"),
    time_column=None,
    sort_key=("id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=(
        string("id", required=True),
        string("award_name", required=True),
        number("season"),
        string("award_type", doc="mvp, dpoy, opoy, ..."),
        Field("platform_markets", kind="struct", children=PLATFORM_MARKETS),
        Field("metadata", kind="struct", children=AWARD_METADATA),
    ),
    wire_only=(_LEAGUE_WIRE,),
)


class OddsKind(StrEnum):
    """What a row of `future_odds` prices: a future or an award (both read as a future's detail)."""

    FUTURE = "future"
    AWARD = "award"


FUTURE_ODDS = Table(
    name="future_odds",
    resource="Future detail outcome",
    doc="The day's snapshot of the odds of every future and award: one row per platform, market and outcome, "
        "from `/futures/{id}` (and `/awards/{id}`).",
    primary_key=("league", "date", "kind", "future_id", "platform", "market_id", "outcome_name"),
    time_column=None,
    sort_key=("kind", "future_id", "platform", "market_id", "outcome_name"),
    partitioned_by="league",
    listed_by_id=False,
    references_markets=False,
    fields=(
        string("kind", required=True, enum=tuple(OddsKind), doc="future or award"),
        string("future_id", required=True, doc="the future's or award's id the pipeline asked the detail of"),
        string("platform", required=True, enum=tuple(SPORTS_PLATFORMS), doc="the platform pricing the outcome"),
        string("market_id", required=True, doc="the platform's market (`markets[].market_id`)"),
        string("outcome_name", required=True),
        string("team_router_id", nullable=True, doc="the team the outcome is (a future) or plays for (an award)"),
        string("american_odds", required=True,
             doc="`odds.american`, signed (`+350`, `-200`) whether sent with `+` or not"),
        number("decimal_odds", required=True, doc="`odds.decimal`"),
        number("implied_probability", required=True,
             doc="`odds.implied_probability`: the platform's price, its margin included"),
        number("volume_24h", nullable=True),
        number("last_trade_price", nullable=True),
        Field("metadata", kind="json", doc="free-form object, as JSON text"),
    ),
)

SPORTS_TABLES: dict[str, Table] = {t.name: t for t in (LEAGUES, TEAMS, FUTURES, AWARDS, FUTURE_ODDS)}

# How far the sports checks let the odds stray, and why (pipeline.engine.checks):
# - an implied probability is 1 / decimal odds and the American odds say the same price, within rounding: the API
#   rounds decimal odds to cents and American odds to whole numbers, which moves a price by well under 1 %;
IMPLIED_PROBABILITY_RELATIVE_TOLERANCE = 0.01
# - a platform's implied probabilities of one future sum to 1 plus its margin; a platform may leave long shots
#   out, and a sum below 1 - this tolerance means outcomes that matter are missing.
OVERROUND_TOLERANCE = 0.05
