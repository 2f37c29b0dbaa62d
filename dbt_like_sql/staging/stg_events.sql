-- materialized: view
-- One row per event: the latest fetch of each (platform, event_id), with the days it was seen. `series_id` is the
-- id of the series the event points at, whether it named it by id or by platform_id (staging.stg_member_ids).
SELECT
    platform,
    id AS event_id,
    platform_id AS platform_event_id,
    coalesce(s.member_id, series_id) AS series_id,
    title AS event_title,
    slug AS event_slug,
    description AS event_description,
    resolution_source_url,
    event_start_at,
    event_end_at,
    CAST(market_count AS BIGINT) AS market_count,
    total_volume AS event_total_volume,
    mutually_exclusive AS event_mutually_exclusive,
    last_synced_at,
    min(date) OVER event_rows AS first_seen_date,
    max(date) OVER event_rows AS last_seen_date,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.events
LEFT JOIN staging.stg_member_ids AS s
    ON s.member_kind = 'series' AND s.member_platform = platform AND s.served_id = series_id
WINDOW event_rows AS (PARTITION BY platform, id)
QUALIFY row_number() OVER (PARTITION BY platform, id ORDER BY _fetched_at DESC, date DESC) = 1
