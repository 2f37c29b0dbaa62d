-- materialized: view
-- One row per series: the latest fetch of each (platform, series_id), with the days it was seen.
SELECT
    platform,
    id AS series_id,
    platform_id AS platform_series_id,
    title AS series_title,
    slug AS series_slug,
    category AS series_category,
    tags AS series_tags,
    CAST(event_count AS BIGINT) AS event_count,
    CAST(market_count AS BIGINT) AS market_count,
    total_volume AS series_total_volume,
    fee_type AS series_fee_type,
    fee_multiplier AS series_fee_multiplier,
    last_synced_at,
    min(date) OVER series_rows AS first_seen_date,
    max(date) OVER series_rows AS last_seen_date,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.series
WINDOW series_rows AS (PARTITION BY platform, id)
-- Ties on the fetch time (one catalogue listing serves several days) go to the latest day.
QUALIFY row_number() OVER (PARTITION BY platform, id ORDER BY _fetched_at DESC, date DESC) = 1
