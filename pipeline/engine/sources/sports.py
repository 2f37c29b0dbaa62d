"""The unified API's sports endpoints as a source: what one (league, day) partition needs.

One request per list (`/league-info` with the teams, `/list-futures`, `/list-awards`) and one per future or award
detail: a league costs 3 + futures + awards requests a day. The spec documents no parameters or payloads for
`/awards/{id}`; an award's detail is asked there first, and at `/futures/{id}` when that path is not served (404),
which is then asked first for the session's other awards. A future or award listed but whose detail is not found
becomes a reject with the reason, never a silent gap. Answers of the wrong shape fail the partition, naming the
endpoint.
"""

from __future__ import annotations

from typing import Any

from pipeline.engine.raw_pages import Detail
from pipeline.engine.schema import OddsKind
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.sources.http import ApiError, HttpLayer, RequestStats

NOT_FOUND = 404
_DETAIL_PATHS = {OddsKind.FUTURE: ("futures",), OddsKind.AWARD: ("awards", "futures")}


class SportsAnswers:
    """A session of the sports endpoints (one asset step): their answers' records, as received."""

    def __init__(self, http: HttpLayer) -> None:
        self.http = http
        self._award_paths = list(_DETAIL_PATHS[OddsKind.AWARD])
        self._figures = ServiceFigures()

    def league(self, league: str) -> tuple[dict[str, Any], list[Any]]:
        """The league's record and its teams' records, from one `/league-info` answer."""
        body = self._data("/league-info", {"league": league, "include_teams": "true"})
        found = _the_league(body, league)
        return found, found.get("teams") if isinstance(found.get("teams"), list) else []

    def listed(self, table: str, league: str) -> list[Any]:
        """The league's `futures` or `awards` records, each with its platforms' market references."""
        endpoint = f"/list-{table}"
        body = self._data(endpoint, {"league": league})
        items = body.get(table) if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ApiError(f"GET {endpoint}: expected 'data.{table}' to be an array")
        return items

    def details(self, asked: dict[OddsKind, list[str]]) -> list[Detail]:
        """Every asked future's and award's detail (ids in sorted order, one request each)."""
        return [self._detail(kind, item) for kind in OddsKind for item in sorted(asked.get(kind, []))]

    def requests(self) -> RequestStats:
        return self.http.stats.snapshot()

    def figures(self) -> ServiceFigures:
        """What the session's answers said of themselves: cache, freshness and the platforms' errors."""
        return self._figures

    def _answered(self, body: Any) -> Any:
        self._figures.meta.read(body)
        self._figures.read_platform_errors(body)
        return body

    def _detail(self, kind: OddsKind, item: str) -> Detail:
        paths = self._award_paths if kind == OddsKind.AWARD else list(_DETAIL_PATHS[kind])
        for path in list(paths):
            try:
                body = self._answered(self.http.get_json(f"/{path}/{item}"))
            except ApiError as error:
                if error.status != NOT_FOUND:
                    raise
                continue
            if kind == OddsKind.AWARD and path != paths[0]:
                self._award_paths = [path, *(p for p in paths if p != path)]
            return Detail(kind.value, item, body.get("data") if isinstance(body, dict) else body)
        tried = " and ".join(f"/{path}/{{id}}" for path in paths)
        return Detail(kind.value, item, {"id": item}, problem=f"listed, but {tried} answered 404 (not found)")

    def _data(self, endpoint: str, params: dict[str, str]) -> Any:
        body = self._answered(self.http.get_json(endpoint, params))
        if not isinstance(body, dict) or "data" not in body:
            raise ApiError(f"GET {endpoint}: expected 'data' in the response")
        return body["data"]


def _the_league(data: Any, league: str) -> dict[str, Any]:
    """The asked league from `data`: the League object, or the one with the asked id in a list of them."""
    candidates = data if isinstance(data, list) else [data]
    for candidate in candidates:
        if isinstance(candidate, dict) and (candidate.get("id") == league or len(candidates) == 1):
            return candidate
    raise ApiError(f"GET /league-info: the answer holds no league {league!r}")
