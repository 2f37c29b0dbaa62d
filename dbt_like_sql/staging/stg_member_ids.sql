-- materialized: view
-- Which event or series an id names, on its platform: `member_kind` 'event' or 'series', the id as served
-- (`served_id`) and the id of the event or series it names (`member_id`). The spec does not say which id a
-- market's event_id and series_id (or an event's series_id) carry: an event's or series' own id, or its
-- platform_id. A served id names the event or series whose id it is, else the one whose platform_id it is
-- (the smallest id, were several to share that platform_id), else, for a series, the one whose slug it is (a
-- Polymarket event without its `series` names it by `seriesSlug`).
WITH named AS (
    SELECT 'event' AS member_kind, platform AS member_platform, id AS served_id, id AS member_id, 1 AS preference
    FROM raw.events
    UNION ALL
    SELECT 'event', platform, platform_id, id, 2 FROM raw.events
    UNION ALL
    SELECT 'series', platform, id, id, 1 FROM raw.series
    UNION ALL
    SELECT 'series', platform, platform_id, id, 2 FROM raw.series
    UNION ALL
    SELECT 'series', platform, slug, id, 3 FROM raw.series
)

SELECT member_kind, member_platform, served_id, member_id
FROM named
WHERE served_id IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY member_kind, member_platform, served_id ORDER BY preference, member_id
) = 1
