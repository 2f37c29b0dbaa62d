"""The unified API's sports endpoints as a source of one (league, day) partition's rows: `SportsAnswers`' records,
normalized, each row with the lineage of its answer (the league and day asked, the source, when it came)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from pipeline.engine.normalize.sports import Lineage, normalize_odds, normalize_records
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import OddsKind
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.sources.http import RequestStats
from pipeline.engine.sources.sports import SportsAnswers


class SportsSource:
    """A session of the sports endpoints (one asset step), its rows normalized with the lineage `source`."""

    def __init__(self, answers: SportsAnswers, source: str) -> None:
        self.answers, self.source = answers, source

    def league(self, league: str, day: date) -> dict[str, Normalized]:
        """The league (`leagues`) and its teams (`teams`), from one `/league-info` answer."""
        found, teams = self.answers.league(league)
        lineage = self._lineage(league, day)
        return {"leagues": normalize_records("leagues", [found], lineage),
                "teams": normalize_records("teams", teams, lineage)}

    def listed(self, table: str, league: str, day: date) -> Normalized:
        """The league's `futures` or `awards`, each with its platforms' market references."""
        items = self.answers.listed(table, league)
        return normalize_records(table, items, self._lineage(league, day))

    def odds(self, league: str, day: date, asked: dict[OddsKind, list[str]]) -> Normalized:
        """Every asked future's and award's detail, as `future_odds` rows (ids in sorted order, one request each)."""
        lineage = self._lineage(league, day)
        return normalize_odds(self.answers.details(asked), lineage)

    def requests(self) -> RequestStats:
        return self.answers.requests()

    def figures(self) -> ServiceFigures:
        """What the session's answers said of themselves: cache, freshness and the platforms' errors."""
        return self.answers.figures()

    def _lineage(self, league: str, day: date) -> Lineage:
        return Lineage(league, day, self.source, datetime.now(UTC))
