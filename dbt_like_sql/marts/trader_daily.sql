-- materialized: table
-- One row per watched trader and UTC day with a profile: the day's metrics and their change since the day
-- before, and the trades of the day read from the trader's history.
--
-- `volume_change` and `pnl_change` are the change of the metric since the trader's row of the previous day;
-- null when that day has no row. `trades` and `traded_notional` (sum(price * size)) count the trades of the
-- day in `staging.stg_profile_trades`.
WITH days AS (
    SELECT
        p.*,
        lag(p.day) OVER (PARTITION BY p.platform, p.trader ORDER BY p.day) AS previous_day,
        lag(p.volume) OVER (PARTITION BY p.platform, p.trader ORDER BY p.day) AS previous_volume,
        lag(p.pnl) OVER (PARTITION BY p.platform, p.trader ORDER BY p.day) AS previous_pnl
    FROM staging.stg_profiles AS p
),

traded AS (
    SELECT platform, trader, trade_date AS day, count(*) AS trades, sum(notional) AS traded_notional
    FROM staging.stg_profile_trades
    GROUP BY platform, trader, trade_date
)

SELECT
    d.platform,
    d.trader,
    d.day,
    d.display_name,
    d.volume,
    d.pnl,
    d.roi,
    d.num_markets_traded,
    d.portfolio_value,
    d.follower_count,
    CASE WHEN d.previous_day = d.day - 1 THEN d.volume - d.previous_volume END AS volume_change,
    CASE WHEN d.previous_day = d.day - 1 THEN d.pnl - d.previous_pnl END AS pnl_change,
    coalesce(t.trades, 0) AS trades,
    coalesce(t.traded_notional, 0) AS traded_notional
FROM days AS d
LEFT JOIN traded AS t
    ON t.platform = d.platform AND t.trader = d.trader AND t.day = d.day
ORDER BY d.platform, d.trader, d.day
