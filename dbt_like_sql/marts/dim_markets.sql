-- materialized: table
-- Every market in its current state (latest fetch), with its event and series: one row per
-- (platform, market_id). `category` is the market's own, else its series'.
SELECT
    m.platform,
    m.market_id,
    m.platform_market_id,
    m.market_title,
    m.market_slug,
    m.status,
    m.market_type,
    coalesce(m.category, s.series_category) AS category,
    m.subcategory,
    m.outcome_count,
    [outcome.name FOR outcome IN m.outcomes] AS outcome_names,
    m.yes_price,
    m.no_price,
    m.volume_24h,
    m.volume_total,
    m.liquidity,
    m.open_interest,
    m.created_at,
    m.trading_start_at,
    m.trading_end_at,
    m.resolution_date,
    m.resolved_at,
    m.event_id,
    e.event_title,
    e.event_start_at,
    e.event_end_at,
    coalesce(m.series_id, e.series_id) AS series_id,
    s.series_title,
    s.series_category,
    m.first_seen_date,
    m.last_seen_date,
    m.fetched_at
FROM staging.stg_markets AS m
LEFT JOIN staging.stg_events AS e
    ON e.platform = m.platform AND e.event_id = m.event_id
LEFT JOIN staging.stg_series AS s
    ON s.platform = m.platform AND s.series_id = coalesce(m.series_id, e.series_id)
ORDER BY m.platform, m.market_id
