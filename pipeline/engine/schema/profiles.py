"""The watched traders' tables: their profiles and metrics, and their trades of the day."""

from __future__ import annotations

from pipeline.engine.schema.core import PLATFORM_FIELD, Table, iso_time, number, string
from pipeline.engine.schema.markets import TRADES

_TRADER = string("trader", required=True, doc="the watched trader, as the watch list names them: a wallet address "
                                              "(polymarket) or a nickname (kalshi)")

PROFILES = Table(
    name="profiles",
    resource="Profile and metrics",
    doc="The watched traders' profiles and trading metrics, as the API stated them when the day's partition was "
        "fetched (`_fetched_at`): one row per trader and day.",
    primary_key=("platform", "date", "trader"),
    time_column=None,
    sort_key=("trader",),
    listed_by_id=False,
    fields=(
        _TRADER,
        PLATFORM_FIELD,
        string("user_id", doc="the platform's id of the trader"),
        string("display_name"),
        string("profile_image"),
        string("description"),
        iso_time("joined_at"),
        number("follower_count"),
        number("following_count"),
        number("profile_view_count"),
        number("volume", doc="notional the trader has traded"),
        number("pnl", doc="profit and loss"),
        number("roi", doc="return on investment: pnl over volume"),
        number("num_markets_traded"),
        number("portfolio_value", doc="value of the positions held"),
        number("open_interest", doc="contracts held"),
    ),
)

PROFILE_TRADES = Table(
    name="profile_trades",
    resource="Trade",
    doc="The watched traders' trades whose timestamp falls in the day, read from their trade history "
        "(`/profile/trades`).",
    primary_key=("platform", "date", "trader", "trade_id"),
    time_column="timestamp",
    sort_key=("trader", "timestamp", "trade_id"),
    references_markets=False,
    fields=(_TRADER, *TRADES.fields),
)
