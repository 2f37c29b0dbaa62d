-- materialized: table
-- Every market in its current state (latest fetch), with its event and series: one row per
-- (platform, market_id). `category` is the market's own, else its series'. Volumes and open interest are in
-- currency (USDC on Polymarket) or in contracts (Kalshi, the *_contracts columns), never both in one column.
SELECT
    m.platform,
    m.market_id,
    m.platform_market_id,
    m.market_title,
    m.outcome_label,
    m.market_subtitle,
    m.market_slug,
    m.status,
    m.market_type,
    coalesce(m.category, s.series_category) AS category,
    m.subcategory,
    m.outcome_count,
    [outcome.name FOR outcome IN m.outcomes] AS outcome_names,
    m.yes_price,
    m.no_price,
    m.last_trade_price,
    m.strike_type,
    m.lower_bound,
    m.upper_bound,
    coalesce(m.mutually_exclusive, e.event_mutually_exclusive) AS mutually_exclusive,
    m.neg_risk_market_id,
    m.settlement_value,
    m.expiration_value,
    m.volume_24h,
    m.volume_total,
    m.volume_24h_contracts,
    m.volume_total_contracts,
    m.liquidity,
    m.open_interest,
    m.open_interest_contracts,
    coalesce(m.fee_type, s.series_fee_type) AS fee_type,
    s.series_fee_multiplier AS fee_multiplier,
    m.created_at,
    m.trading_start_at,
    m.trading_end_at,
    m.resolution_date,
    m.resolved_at,
    m.event_id,
    e.event_title,
    coalesce(m.event_start_at, e.event_start_at) AS event_start_at,
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
