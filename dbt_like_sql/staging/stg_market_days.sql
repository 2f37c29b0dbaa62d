-- materialized: view
-- One row per market and UTC day it was live (tradable at some moment of the day), with its status when
-- that day's partition was fetched: the grain of raw.markets, deduplicated to the latest fetch.
SELECT
    platform,
    date AS day,
    id AS market_id,
    status,
    market_type,
    _fetched_at AS fetched_at
FROM raw.markets
QUALIFY row_number() OVER (PARTITION BY platform, date, id ORDER BY _fetched_at DESC) = 1
