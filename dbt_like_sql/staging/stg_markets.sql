-- materialized: view
-- One row per market in its latest fetched state (raw.markets holds a copy per day the market was live).
--
-- Binary markets have two outcomes, the first being yes / up / team A: `yes_price` and `no_price` are
-- their current prices, null for categorical and scalar markets (see staging.stg_market_outcomes for
-- every outcome's price). `event_id` and `series_id` are the ids of the event and series the market points at,
-- whether it named them by id or by platform_id (staging.stg_member_ids); as served where they name none.
SELECT
    platform,
    id AS market_id,
    platform_id AS platform_market_id,
    coalesce(e.member_id, event_id) AS event_id,
    coalesce(s.member_id, series_id) AS series_id,
    title AS market_title,
    outcome_label,
    subtitle AS market_subtitle,
    coalesce(market_slug, slug) AS market_slug,
    description AS market_description,
    category,
    subcategory,
    tags,
    status,
    market_type,
    len(outcomes) AS outcome_count,
    outcomes,
    current_prices,
    CASE WHEN market_type = 'binary'
        THEN [p.price FOR p IN current_prices IF p.key = outcomes[1].id][1] END AS yes_price,
    CASE WHEN market_type = 'binary'
        THEN [p.price FOR p IN current_prices IF p.key = outcomes[2].id][1] END AS no_price,
    last_trade_price,
    strike_type,
    lower_bound,
    upper_bound,
    mutually_exclusive,
    neg_risk_market_id,
    settlement_value,
    expiration_value,
    -- Volumes in currency (USDC on Polymarket) and in contracts (Kalshi) are separate columns: never mixed.
    volume_24h,
    volume_7d,
    volume_total,
    volume_24h_contracts,
    volume_total_contracts,
    liquidity,
    open_interest,
    open_interest_contracts,
    fee_type,
    event_start_at,
    CAST(unique_traders AS BIGINT) AS unique_traders,
    fee_rate,
    created_at,
    trading_start_at,
    trading_end_at,
    resolution_date,
    resolved_at,
    resolution_source,
    source_url,
    last_synced_at,
    min(date) OVER market_rows AS first_seen_date,
    max(date) OVER market_rows AS last_seen_date,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.markets
LEFT JOIN staging.stg_member_ids AS e
    ON e.member_kind = 'event' AND e.member_platform = platform AND e.served_id = event_id
LEFT JOIN staging.stg_member_ids AS s
    ON s.member_kind = 'series' AND s.member_platform = platform AND s.served_id = series_id
WINDOW market_rows AS (PARTITION BY platform, id)
-- Ties on the fetch time (one catalogue listing serves several days) go to the latest day.
QUALIFY row_number() OVER (PARTITION BY platform, id ORDER BY _fetched_at DESC, date DESC) = 1
