-- materialized: table
-- Traded volume per platform, category and week (weeks start on Monday, UTC): one row per
-- (platform, category, week_start). volume is the notional, sum(price * size) in the platform's currency;
-- markets without a category count under 'Uncategorised'.
SELECT
    t.platform,
    coalesce(m.category, 'Uncategorised') AS category,
    CAST(date_trunc('week', t.trade_date) AS DATE) AS week_start,
    count(DISTINCT t.market_id) AS traded_markets,
    count(*) AS trades,
    sum(t.notional) AS volume,
    sum(t.size) AS contracts
FROM staging.stg_trades AS t
LEFT JOIN marts.dim_markets AS m
    ON m.platform = t.platform AND m.market_id = t.market_id
GROUP BY ALL
ORDER BY t.platform, week_start, volume DESC
