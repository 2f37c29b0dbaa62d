-- materialized: table
-- One row per market and UTC day with at least one trade.
--
-- Volume: `volume` is the notional traded, sum(price * size) over every trade of every outcome, in the
-- platform's currency; `contracts` is sum(size).
-- Prices (`vwap`, `open_price`, `high_price`, `low_price`, `close_price`) are those of the market's first
-- outcome (yes / up / long / team A), so that they describe one quantity: a trade of the second outcome of
-- a two-outcome market at p counts as a trade of the first at 1 - p; trades of the other outcomes of a
-- categorical market carry no price of the first outcome and are left out of the prices (but not out of
-- the volume). vwap = sum(first-outcome price * size) / sum(size) over those trades.
-- `last_price` is the close of the day's last price-history point of the first outcome.
WITH outcomes AS (
    SELECT platform, market_id, outcome_index, outcome_id, outcome_name,
        count(*) OVER (PARTITION BY platform, market_id) AS outcome_count
    FROM staging.stg_market_outcomes
),

trades AS (
    SELECT
        t.*,
        CASE
            WHEN o.outcome_index = 1 THEN t.price
            WHEN o.outcome_index = 2 AND o.outcome_count = 2 THEN 1 - t.price
        END AS first_outcome_price
    FROM staging.stg_trades AS t
    LEFT JOIN outcomes AS o
        ON o.platform = t.platform AND o.market_id = t.market_id AND o.outcome_name = t.outcome_name
),

daily AS (
    SELECT
        platform,
        market_id,
        trade_date AS day,
        count(*) AS trades,
        sum(notional) AS volume,
        sum(size) AS contracts,
        count(DISTINCT outcome_name) AS outcomes_traded,
        sum(first_outcome_price * size) FILTER (WHERE first_outcome_price IS NOT NULL)
            / sum(size) FILTER (WHERE first_outcome_price IS NOT NULL) AS vwap,
        arg_min(first_outcome_price, (traded_at, trade_id)) FILTER (WHERE first_outcome_price IS NOT NULL)
            AS open_price,
        max(first_outcome_price) AS high_price,
        min(first_outcome_price) AS low_price,
        arg_max(first_outcome_price, (traded_at, trade_id)) FILTER (WHERE first_outcome_price IS NOT NULL)
            AS close_price,
        min(traded_at) AS first_trade_at,
        max(traded_at) AS last_trade_at
    FROM trades
    GROUP BY platform, market_id, trade_date
),

last_prices AS (
    SELECT
        p.platform,
        p.market_id,
        p.period_date AS day,
        arg_max(p.close_price, p.period_start) AS last_price
    FROM staging.stg_price_history AS p
    JOIN outcomes AS o
        ON o.platform = p.platform AND o.market_id = p.market_id AND o.outcome_id = p.outcome_id
    WHERE o.outcome_index = 1
    GROUP BY p.platform, p.market_id, p.period_date
)

SELECT
    d.platform,
    d.market_id,
    d.day,
    m.market_title,
    m.market_type,
    d.trades,
    d.volume,
    d.contracts,
    d.vwap,
    d.open_price,
    d.high_price,
    d.low_price,
    d.close_price,
    d.outcomes_traded,
    l.last_price,
    d.first_trade_at,
    d.last_trade_at
FROM daily AS d
LEFT JOIN marts.dim_markets AS m
    ON m.platform = d.platform AND m.market_id = d.market_id
LEFT JOIN last_prices AS l
    ON l.platform = d.platform AND l.market_id = d.market_id AND l.day = d.day
ORDER BY d.platform, d.market_id, d.day
