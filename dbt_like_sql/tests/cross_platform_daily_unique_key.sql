-- marts.cross_platform_daily has one row per (polymarket_id, kalshi_id, day).
SELECT polymarket_id, kalshi_id, day, count(*) AS copies
FROM marts.cross_platform_daily
GROUP BY polymarket_id, kalshi_id, day
HAVING count(*) > 1
