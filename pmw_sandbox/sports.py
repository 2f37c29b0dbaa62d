"""The sandbox's sports: leagues, teams, futures and awards, and their odds on five platforms, day by day.

Deterministic like the rest of the world: a team's strength is a function of the seed, the team and the day,
so two worlds ending on different days agree on every team and future and quote different odds. Each platform
takes its own margin (its implied probabilities of one future sum to 1 plus it) and lists its own selection:
not every platform lists every future, team or long shot, so some outcomes are priced by one platform only.
Records are in the unified API's wire format (spec: League, Team, Future, Award, Future detail).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date
from functools import cached_property

import numpy as np

from pipeline.engine.schema import SPORTS_PLATFORMS, League, Platform

Record = dict[str, object]

# The share each platform adds on top of fair prices, and below which true probability it leaves a long shot out.
MARGINS: dict[Platform, float] = {
    Platform.POLYMARKET: 0.02, Platform.KALSHI: 0.04, Platform.PROPHETX: 0.07, Platform.NOVIG: 0.03,
    Platform.SXBET: 0.05,
}
LONG_SHOT_FLOOR: dict[Platform, float] = {
    Platform.POLYMARKET: 0.0, Platform.KALSHI: 0.003, Platform.PROPHETX: 0.008, Platform.NOVIG: 0.005,
    Platform.SXBET: 0.006,
}
# How often a platform lists a future (polymarket lists them all) and a team (on its own id scheme).
FUTURE_COVERAGE: dict[Platform, float] = {
    Platform.POLYMARKET: 1.0, Platform.KALSHI: 0.9, Platform.PROPHETX: 0.6, Platform.NOVIG: 0.7, Platform.SXBET: 0.5,
}
TEAM_COVERAGE: dict[Platform, float] = {
    Platform.POLYMARKET: 1.0, Platform.KALSHI: 1.0, Platform.PROPHETX: 0.9, Platform.NOVIG: 0.8, Platform.SXBET: 0.85,
}
# How far a platform's view of a chance strays from the true one (a share either way): what makes prices differ.
OPINION = 0.2
AWARD_CANDIDATES = 8
SEASON = 2026

_CITIES = (
    ("Atlanta", "GA", "ATL"), ("Boston", "MA", "BOS"), ("Chicago", "IL", "CHI"), ("Dallas", "TX", "DAL"),
    ("Denver", "CO", "DEN"), ("Detroit", "MI", "DET"), ("Houston", "TX", "HOU"), ("Miami", "FL", "MIA"),
    ("Phoenix", "AZ", "PHX"), ("Seattle", "WA", "SEA"), ("Portland", "OR", "POR"), ("Tampa", "FL", "TB"),
    ("Toronto", "ON", "TOR"), ("Montreal", "QC", "MTL"), ("Vancouver", "BC", "VAN"), ("Nashville", "TN", "NSH"),
    ("Cleveland", "OH", "CLE"), ("Pittsburgh", "PA", "PIT"), ("Baltimore", "MD", "BAL"), ("Minneapolis", "MN", "MIN"),
    ("St. Louis", "MO", "STL"), ("Kansas City", "MO", "KC"), ("Las Vegas", "NV", "LV"), ("San Diego", "CA", "SD"),
    ("Sacramento", "CA", "SAC"), ("Orlando", "FL", "ORL"), ("Charlotte", "NC", "CHA"), ("Buffalo", "NY", "BUF"),
    ("Cincinnati", "OH", "CIN"), ("Milwaukee", "WI", "MIL"), ("Indianapolis", "IN", "IND"), ("Columbus", "OH", "CBJ"),
)
_NICKNAMES = ("Comets", "Foxes", "Rangers", "Owls", "Pilots", "Storm", "Wolves", "Mariners", "Hawks", "Bison",
              "Knights", "Giants", "Rockets", "Falcons", "Bears", "Sharks")
_FIRST = ("Alex", "Jordan", "Casey", "Taylor", "Morgan", "Riley", "Jamie", "Avery", "Drew", "Quinn", "Rowan", "Sam")
_LAST = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Alvarez", "Novak", "Byrne", "Costa", "Haddad", "Kowalski",
         "Mensah", "Sato", "Ferreira", "Walsh")


@dataclass(frozen=True)
class LeagueShape:
    name: str
    sport: str
    conferences: tuple[tuple[str, tuple[str, ...]], ...]  # each conference with its divisions
    teams: int
    awards: tuple[tuple[str, str], ...]  # (award_type, award name)
    season_start: date
    season_end: date


LEAGUES: dict[League, LeagueShape] = {
    League.NFL: LeagueShape("National Football League", "football",
                            (("AFC", ("East", "North", "South", "West")), ("NFC", ("East", "North", "South", "West"))),
                            32, (("mvp", "Most Valuable Player"), ("opoy", "Offensive Player of the Year"),
                                 ("dpoy", "Defensive Player of the Year")), date(2026, 9, 10), date(2027, 2, 14)),
    League.NBA: LeagueShape("National Basketball Association", "basketball",
                            (("Eastern", ("Atlantic", "Central", "Southeast")),
                             ("Western", ("Northwest", "Pacific", "Southwest"))),
                            30, (("mvp", "Most Valuable Player"), ("dpoy", "Defensive Player of the Year"),
                                 ("roy", "Rookie of the Year")), date(2026, 10, 20), date(2027, 6, 20)),
    League.NHL: LeagueShape("National Hockey League", "hockey",
                            (("Eastern", ("Atlantic", "Metropolitan")), ("Western", ("Central", "Pacific"))),
                            32, (("mvp", "Hart Trophy"), ("dpoy", "Norris Trophy"), ("roy", "Calder Trophy")),
                            date(2026, 10, 7), date(2027, 6, 15)),
    League.MLB: LeagueShape("Major League Baseball", "baseball",
                            (("American", ("East", "Central", "West")), ("National", ("East", "Central", "West"))),
                            30, (("mvp", "Most Valuable Player"), ("cy_young", "Cy Young Award"),
                                 ("roy", "Rookie of the Year")), date(2027, 3, 26), date(2027, 11, 1)),
}


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(frozen=True)
class Team:
    league: League
    router_id: str
    name: str
    nickname: str
    abbreviation: str
    city: str
    state: str
    conference: str
    division: str
    platform_ids: dict[Platform, str]


@dataclass(frozen=True)
class Question:
    """A future (a team wins it) or an award (a player wins it), with the platforms that list it."""

    league: League
    kind: str  # future or award
    id: str
    name: str
    type: str
    candidates: tuple[tuple[str, str], ...]  # (outcome name, team router id)
    platforms: tuple[Platform, ...]


class SportsWorld:
    """The four leagues of one seed; odds as quoted on any day."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    @cached_property
    def teams(self) -> dict[League, list[Team]]:
        return {league: self._teams(league, shape) for league, shape in LEAGUES.items()}

    @cached_property
    def questions(self) -> dict[League, list[Question]]:
        return {league: self._futures(league) + self._awards(league) for league in LEAGUES}

    def question(self, kind: str, question_id: str) -> Question | None:
        for questions in self.questions.values():
            for question in questions:
                if question.id == question_id and question.kind == kind:
                    return question
        return None

    # -- the catalogue ---------------------------------------------------------------------------------

    def _teams(self, league: League, shape: LeagueShape) -> list[Team]:
        slots = [(conference, division) for conference, divisions in shape.conferences for division in divisions]
        teams = []
        for i in range(shape.teams):
            city, state, code = _CITIES[i]
            nickname = _NICKNAMES[int(_unit(self.seed, league, code, "nickname") * len(_NICKNAMES))]
            conference, division = slots[i % len(slots)]
            ids = {p: self._team_platform_id(league, code, p) for p in SPORTS_PLATFORMS
                   if _unit(self.seed, league, code, p) < TEAM_COVERAGE[p]}
            teams.append(Team(league, f"{league}-{code.lower()}", f"{city} {nickname}", nickname, code, city, state,
                              conference, division, ids))
        return teams

    def _team_platform_id(self, league: League, code: str, platform: Platform) -> str:
        number = int(_unit(self.seed, league, code, platform, "id") * 900_000) + 100_000
        return {
            Platform.POLYMARKET: f"{league}-{code.lower()}",
            Platform.KALSHI: code,
            Platform.PROPHETX: str(number),
            Platform.NOVIG: f"{league}-{code.lower()}-{number % 1000}",
            Platform.SXBET: str(number % 100_000),
        }[platform]

    def _listing(self, league: League, question_id: str) -> tuple[Platform, ...]:
        return tuple(p for p in SPORTS_PLATFORMS if _unit(self.seed, league, question_id, p) < FUTURE_COVERAGE[p])

    def _futures(self, league: League) -> list[Question]:
        shape, teams = LEAGUES[league], self.teams[league]
        groups: list[tuple[str, str, str, list[Team]]] = [("championship", "championship", "Champion", teams)]
        for conference, divisions in shape.conferences:
            groups.append((f"conf-{conference.lower()}", "conference", f"{conference} Conference winner",
                           [t for t in teams if t.conference == conference]))
            groups += [(f"div-{conference.lower()}-{division.lower()}", "division",
                        f"{conference} {division} Division winner",
                        [t for t in teams if t.conference == conference and t.division == division])
                       for division in divisions]
        return [Question(league, "future", f"{league}-{SEASON}-{slug}", f"{SEASON} {league.upper()} {title}", kind,
                         tuple((t.name, t.router_id) for t in members),
                         self._listing(league, f"{league}-{SEASON}-{slug}"))
                for slug, kind, title, members in groups]

    def _awards(self, league: League) -> list[Question]:
        teams = self.teams[league]
        awards = []
        for award_type, title in LEAGUES[league].awards:
            award_id = f"{league}-{SEASON}-{award_type}"
            players = []
            for n in range(AWARD_CANDIDATES):
                first = _FIRST[int(_unit(self.seed, award_id, n, "first") * len(_FIRST))]
                last = _LAST[(n + int(_unit(self.seed, award_id, "last") * len(_LAST))) % len(_LAST)]
                team = teams[int(_unit(self.seed, award_id, n, "team") * len(teams))]
                players.append((f"{first} {last}", team.router_id))
            awards.append(Question(league, "award", award_id, f"{SEASON} {league.upper()} {title}", award_type,
                                   tuple(players), self._listing(league, award_id)))
        return awards

    # -- prices ----------------------------------------------------------------------------------------

    def fair_probabilities(self, question: Question, day: date) -> np.ndarray:
        """The candidates' true chances on the day (they sum to 1): strengths that drift from day to day."""
        ordinal = day.toordinal()
        strengths = np.array([
            3.0 * _unit(self.seed, question.id, name)
            + 0.6 * np.sin(2 * np.pi * (ordinal / (20 + 30 * _unit(self.seed, name, "period"))
                                        + _unit(self.seed, name, "phase")))
            + 0.15 * _unit(self.seed, question.id, name, ordinal)
            for name, _ in question.candidates
        ])
        weights = np.exp(1.6 * strengths)
        return weights / weights.sum()

    def quotes(self, question: Question, day: date) -> list[tuple[Platform, list[Record]]]:
        """Each listing platform's outcomes on the day, in the spec's outcome shape, margin included."""
        fair = self.fair_probabilities(question, day)
        markets = []
        for platform in question.platforms:
            opinion = 1 + OPINION * np.array([_unit(self.seed, question.id, name, platform, day) - 0.5
                                              for name, _ in question.candidates])
            believed = fair * opinion / (fair * opinion).sum()
            outcomes = [
                _outcome(name, team, float(np.clip(chance * (1 + MARGINS[platform]), 0.002, 0.98)), platform,
                         _unit(self.seed, name, platform, day))
                for (name, team), chance in zip(question.candidates, believed, strict=True)
                if chance >= LONG_SHOT_FLOOR[platform]
            ]
            markets.append((platform, outcomes))
        return markets


    # -- records ---------------------------------------------------------------------------------------

    def league_record(self, league: League, include_teams: bool) -> Record:
        shape = LEAGUES[league]
        questions = self.questions[league]
        record: Record = {
            "id": league.value, "name": shape.name, "abbreviation": league.value.upper(), "sport": shape.sport,
            "season": {"year": SEASON, "start_date": shape.season_start.isoformat(),
                       "end_date": shape.season_end.isoformat()},
            "endpoints": {"awards": True, "futures": True, "games": False, "list_games": False, "list_awards": True,
                          "list_futures": True},
            "counts": {"teams": len(self.teams[league]), "awards": sum(q.kind == "award" for q in questions),
                       "futures": sum(q.kind == "future" for q in questions)},
            "status": "operational",
        }
        if include_teams:
            record["teams"] = [_team_record(team) for team in self.teams[league]]
        return record

    def list_item(self, question: Question) -> Record:
        """A future or an award as its list endpoint shows it."""
        name, kind = ("future_name", "future_type") if question.kind == "future" else ("award_name", "award_type")
        item: Record = {"id": question.id, name: question.name, "league": question.league.value, "season": SEASON,
                        kind: question.type}
        if question.kind == "future":
            item["category"] = "futures"
        item["platform_markets"] = {p.value: self.platform_market(question, p) for p in question.platforms}
        metadata: Record = {"deadline": LEAGUES[question.league].season_end.isoformat(),
                            "description": f"Who wins the {question.name}?"}
        if question.kind == "future":
            metadata["eligible_teams"] = [team for _, team in question.candidates]
        else:
            metadata["eligibility"] = "regular-season players"
        item["metadata"] = metadata
        return item

    def platform_market(self, question: Question, platform: Platform) -> Record:
        number = int(_unit(self.seed, question.id, platform, "market") * 900_000) + 100_000
        return {
            Platform.POLYMARKET: lambda: {"market_id": str(number),
                                          "clob_token_ids": [str(number * 10**70 + k) for k in (1, 2)]},
            Platform.KALSHI: lambda: {"event_ticker": f"KX{question.id.upper().replace('-', '')}"},
            Platform.PROPHETX: lambda: {"tournament_id": str(number)},
            Platform.NOVIG: lambda: {"market_slug": question.id},
            Platform.SXBET: lambda: {"league_id": number % 10_000},
        }[platform]()

    def detail(self, question: Question, day: date) -> Record:
        """A future's (or an award's) detail on the day: the list item's fields and every platform's market."""
        item = self.list_item(question)
        references = item.pop("platform_markets")
        detail: Record = {"id": question.id, "future_name": question.name, "league": question.league.value,
                          "season": SEASON, "future_type": question.type,
                          "category": "futures" if question.kind == "future" else "awards",
                          "metadata": item["metadata"]}
        detail["markets"] = [{"platform": platform.value, "market_id": str(next(iter(references[platform.value]
                                                                                         .values()))),
                              "outcomes": outcomes}
                             for platform, outcomes in self.quotes(question, day)]
        return detail


def _team_record(team: Team) -> Record:
    return {
        "router_id": team.router_id, "name": team.name, "abbreviation": team.abbreviation, "city": team.city,
        "platform_ids": {p.value: team_id for p, team_id in team.platform_ids.items()},
        "metadata": {"logo_url": f"https://example.invalid/logos/{team.router_id}.png",
                     "colors": ["#1d428a", "#ffffff"], "founded": 1900 + int(_unit(team.router_id) * 100),
                     "stadium": f"{team.city} Arena"},
        "state": team.state, "conference": team.conference, "division": team.division,
    }


def american_odds(decimal: float) -> int:
    """Decimal odds as American odds: +A pays A on 100, -A stakes A to win 100."""
    return round((decimal - 1) * 100) if decimal >= 2 else -round(100 / (decimal - 1))


def _outcome(name: str, team: str, quoted: float, platform: Platform, draw: float) -> Record:
    decimal = max(1.01, round(1 / quoted, 2))
    american = american_odds(decimal)
    implied = round(1 / decimal, 6)
    exchange = platform in (Platform.POLYMARKET, Platform.KALSHI, Platform.NOVIG)
    return {
        "outcome_name": name,
        "odds": {"american": f"+{american}" if american > 0 else str(american), "decimal": decimal,
                 "implied_probability": implied},
        "team_router_id": team,
        "volume_24h": round(20_000 * draw * implied, 2),
        "last_trade_price": round(implied * (0.98 + 0.04 * draw), 4) if exchange else None,
        "metadata": {"source": platform.value},
    }
