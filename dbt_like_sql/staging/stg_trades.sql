-- materialized: view
-- One row per trade: the latest fetch of each (platform, market_id, trade_id).
--
-- `price` is the price paid for one contract of the traded outcome (0 to 1; a contract pays 1 if its
-- outcome wins), `size` the number of contracts, and `notional` = price * size, the money that changed
-- hands, in the platform's currency (USDC on Polymarket, USD on Kalshi). "Volume" in the marts is the
-- sum of `notional`.
-- A Polymarket match is one trade, counted once: its taker's row. The makers' rows of the same match
-- (`taker` = false) are that trade seen from the resting orders, and are left out: both sources ask taker
-- rows only, but partitions landed before may hold makers' rows; rows that do not say (`taker` null) are kept.
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
WHERE taker IS NOT FALSE
QUALIFY row_number() OVER (PARTITION BY platform, market_id, trade_id ORDER BY _fetched_at DESC, date DESC) = 1
