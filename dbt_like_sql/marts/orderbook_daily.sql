-- materialized: table
-- One row per market and UTC day with at least one orderbook snapshot.
--
-- `time_weighted_spread`: each snapshot's spread holds from its round until the market's next snapshot of the
-- day (the day's last one until midnight); the average of the spreads weighted by those durations, over the
-- snapshots with both sides quoted (null when none had). `median_best_level_depth`: the median over the day's
-- snapshots of the size at the best bid plus the size at the best ask (an empty side counts 0).
-- `empty_side_share`: the share of the day's snapshots with no bid or no ask.
WITH held AS (
    SELECT
        platform,
        market_id,
        snapshot_date AS day,
        snapshot_at,
        spread,
        coalesce(best_bid_size, 0) + coalesce(best_ask_size, 0) AS best_level_depth,
        bid_levels = 0 OR ask_levels = 0 AS has_empty_side,
        coalesce(
            epoch(lead(snapshot_at) OVER (PARTITION BY platform, market_id, snapshot_date ORDER BY snapshot_at)),
            epoch(CAST(snapshot_date + INTERVAL 1 DAY AS TIMESTAMPTZ))
        ) - epoch(snapshot_at) AS held_s
    FROM staging.stg_orderbook_snapshots
)

SELECT
    platform,
    market_id,
    day,
    count(*) AS snapshots,
    sum(spread * held_s) FILTER (WHERE spread IS NOT NULL)
        / nullif(sum(held_s) FILTER (WHERE spread IS NOT NULL), 0) AS time_weighted_spread,
    median(best_level_depth) AS median_best_level_depth,
    avg(CASE WHEN has_empty_side THEN 1.0 ELSE 0.0 END) AS empty_side_share,
    min(snapshot_at) AS first_snapshot_at,
    max(snapshot_at) AS last_snapshot_at
FROM held
GROUP BY platform, market_id, day
ORDER BY platform, market_id, day
