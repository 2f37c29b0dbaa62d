-- materialized: table
-- One row per platform and UTC day in the lake.
--
-- active_markets: markets live on the day (tradable at some moment of it); traded_markets: those with at
-- least one trade; new_markets: markets created on the day; resolved_markets: markets resolved on the
-- day (both among the markets in the lake). trades, volume (notional, sum(price * size) in the
-- platform's currency) and contracts (sum(size)) count every trade of the day.
WITH live AS (
    SELECT platform, day, count(DISTINCT market_id) AS active_markets
    FROM staging.stg_market_days
    GROUP BY platform, day
),

trading AS (
    SELECT
        platform,
        trade_date AS day,
        count(DISTINCT market_id) AS traded_markets,
        count(*) AS trades,
        sum(notional) AS volume,
        sum(size) AS contracts
    FROM staging.stg_trades
    GROUP BY platform, trade_date
),

created AS (
    SELECT platform, CAST(created_at AT TIME ZONE 'UTC' AS DATE) AS day, count(*) AS new_markets
    FROM marts.dim_markets
    WHERE created_at IS NOT NULL
    GROUP BY ALL
),

resolved AS (
    SELECT platform, CAST(resolved_at AT TIME ZONE 'UTC' AS DATE) AS day, count(*) AS resolved_markets
    FROM marts.dim_markets
    WHERE resolved_at IS NOT NULL
    GROUP BY ALL
),

days AS (
    SELECT platform, day FROM live
    UNION
    SELECT platform, day FROM trading
)

SELECT
    d.platform,
    d.day,
    coalesce(l.active_markets, 0) AS active_markets,
    coalesce(t.traded_markets, 0) AS traded_markets,
    coalesce(c.new_markets, 0) AS new_markets,
    coalesce(r.resolved_markets, 0) AS resolved_markets,
    coalesce(t.trades, 0) AS trades,
    coalesce(t.volume, 0) AS volume,
    coalesce(t.contracts, 0) AS contracts
FROM days AS d
LEFT JOIN live AS l USING (platform, day)
LEFT JOIN trading AS t USING (platform, day)
LEFT JOIN created AS c USING (platform, day)
LEFT JOIN resolved AS r USING (platform, day)
ORDER BY d.platform, d.day
