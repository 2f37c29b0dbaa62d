-- materialized: view
-- One row per watched trader and day: their profile and trading metrics as the API stated them when the day
-- was fetched (`fetched_at`; the schedule fetches yesterday just after midnight).
SELECT
    platform,
    trader,
    date AS day,
    user_id,
    display_name,
    joined_at,
    follower_count,
    following_count,
    volume,
    pnl,
    roi,
    num_markets_traded,
    portfolio_value,
    open_interest,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.profiles
