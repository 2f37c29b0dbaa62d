-- market_daily has a row only for a market and day with at least one trade.
SELECT platform, market_id, day, trades
FROM marts.market_daily
WHERE coalesce(trades, 0) = 0
