"""The sports endpoints: `/league-info`, `/list-futures`, `/list-awards`, `/futures/{id}` and `/awards/{id}`,
in the readings' order, odds and award paths."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.engine.schema import SPORTS_PLATFORMS, League, Platform
from pmw_sandbox.router import Handler
from pmw_sandbox.sports import Question, SportsWorld
from pmw_sandbox.unified_context import Context
from pmw_sandbox.unified_http import Query, bad, not_found
from pmw_sandbox.world import Record, iso


class SportsRoutes:
    def __init__(self, context: Context, sports: SportsWorld) -> None:
        self.context, self.sports = context, sports

    def routes(self) -> dict[str, Handler]:
        return {
            "/league-info": self.league_info,
            "/list-futures": lambda query: self.list_questions(query, "future"),
            "/list-awards": lambda query: self.list_questions(query, "award"),
            "/futures/{question_id}": lambda query, question_id: self.detail("futures", question_id),
            "/awards/{question_id}": lambda query, question_id: self.detail("awards", question_id),
        }

    def league_info(self, query: Query) -> Record:
        """One league (`league=`), or, the sandbox's reading of "all leagues are returned", a list of them all."""
        league = _league(query, required=False)
        teams = query.flag("include_teams")
        leagues = [league] if league is not None else list(League)
        records = [self.sports.league_record(one, teams) for one in leagues]
        if self.context.readings.list_order == "reversed":
            for record in records:
                record.get("teams", []).reverse()  # type: ignore[union-attr]
        return {"data": records[0] if league is not None else records, "meta": {"request_time": 0}}

    def list_questions(self, query: Query, kind: str) -> Record:
        """`/list-futures` or `/list-awards` of a league, of one platform or every one."""
        league = _league(query, required=True)
        platform = query.platform(SPORTS_PLATFORMS)
        wanted_type = query.text(f"{kind}_type")
        assert league is not None
        chosen = [q for q in self.sports.questions[league] if q.kind == kind
                  and (wanted_type is None or q.type == wanted_type) and (platform is None or platform in q.platforms)]
        items = [self.sports.list_item(q) for q in self.context.ordered(chosen)]
        platforms = [platform] if platform is not None else list(SPORTS_PLATFORMS)
        return {"data": {f"{kind}s": items}, "meta": self._meta(platforms)}

    def detail(self, path: str, question_id: str) -> Record:
        """`/futures/{id}`: a future's detail, today's odds on every platform that lists it. `/awards/{id}` serves
        an award's in the same shape (reading award_detail=awards), or nothing, the award's detail being served at
        `/futures/{id}` (award_detail=futures)."""
        by_futures_path = self.context.readings.award_detail == "futures"
        kinds = {"futures": ("future", "award") if by_futures_path else ("future",),
                 "awards": () if by_futures_path else ("award",)}[path]
        question = next(filter(None, (self.sports.question(kind, question_id) for kind in kinds)), None)
        if question is None:
            raise not_found(f"{path[:-1]} {question_id!r} not found")
        detail = self._as_read_detail(question)
        return {"data": detail, "meta": self._meta([Platform(m["platform"]) for m in detail["markets"]])}

    def _as_read_detail(self, question: Question) -> Record:
        detail = self.sports.detail(question, self.context.world.config.end_day)
        readings = self.context.readings
        for market in detail["markets"]:
            if readings.list_order == "reversed":
                market["outcomes"].reverse()
            if readings.american_odds == "bare":
                for outcome in market["outcomes"]:
                    outcome["odds"]["american"] = outcome["odds"]["american"].removeprefix("+")
        if readings.list_order == "reversed":
            detail["markets"].reverse()
        return detail

    def _meta(self, platforms: Sequence[Platform]) -> Record:
        return {"platforms_queried": [p.value for p in platforms], "request_time": 0,
                "data_freshness": iso(self.context.world.as_of), "platform_errors": {}}


def _league(query: Query, required: bool) -> League | None:
    value = query.text("league")
    if value is None:
        if required:
            raise bad("league", f"is required; expected one of {', '.join(League)}")
        return None
    if value not in League.__members__.values():
        raise bad("league", f"expected one of {', '.join(League)}, got {value!r}")
    return League(value)
