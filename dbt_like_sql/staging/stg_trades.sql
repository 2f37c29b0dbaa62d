-- materialized: view
-- One row per trade: the latest fetch of each (platform, market_id, trade_id).
--
-- `price` is the price paid for one contract of the traded outcome (0 to 1; a contract pays 1 if its
-- outcome wins), `size` the number of contracts, and `notional` = price * size, the money that changed
-- hands, in the platform's currency (USDC on Polymarket, USD on Kalshi). "Volume" in the marts is the
-- sum of `notional`.
SELECT
    platform,
    market_id,
    trade_id,
    "timestamp" AS traded_at,
    date AS trade_date,
    outcome AS outcome_name,
    side,
    price,
    size,
    price * size AS notional,
    taker AS is_taker,
    transaction_hash,
    "user".name AS trader,
    "user".pseudonym AS trader_pseudonym,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.trades
QUALIFY row_number() OVER (PARTITION BY platform, market_id, trade_id ORDER BY _fetched_at DESC, date DESC) = 1
