"""Which of a market's ids a request for that market names it by: its service `id`, else its `platform_id`.

The spec does not say which id `/trades?market_id=`, `/price-history?market_ids=` and `/markets/{id}/orderbook`
take (its sample market id for `/trades` is a numeric string: Polymarket's id, not its condition id). The
pipeline asks by the market's `id`; a server that knows a market only by its platform's own id answers 404
NOT_FOUND, and the market is asked once more by its `platform_id`. Once that has worked, the platform's other
markets are asked by `platform_id` first for the rest of the session, so that such a server costs one extra
request per session, not one per market (and if the service id works again after all, it is first again).
Rows belong to the market asked for whichever id the request carried: the caller attributes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from pipeline.engine.sources.http import ApiError

log = logging.getLogger("pipeline.engine.sources.market_ids")
T = TypeVar("T")


class MarketIdParam:
    """One platform's choice, for one session, between asking markets by `id` and by `platform_id`."""

    def __init__(self) -> None:
        self.platform_id_first = False

    def ask(self, ids: Sequence[str], platform_ids: Sequence[str | None], request: Callable[[list[str]], T]) -> T:
        """`request` of the markets `ids` (whose platform ids are `platform_ids`, None where unknown), named by
        the ids that work first; after a 404 NOT_FOUND, asked once more by the other ids. An ApiError other than
        a 404, or a 404 both ways, is raised."""
        own = list(ids)
        other = [platform_id or market_id for market_id, platform_id in zip(own, platform_ids, strict=True)]
        if other == own:
            return request(own)
        first, then = (other, own) if self.platform_id_first else (own, other)
        try:
            return request(first)
        except ApiError as error:
            if error.status != 404:
                raise
            log.info("%s; asking again by the markets' %s", error, "id" if then is own else "platform_id")
        answer = request(then)
        self.platform_id_first = then is other
        return answer
