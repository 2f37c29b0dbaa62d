-- marts.platform_margin_daily has one row per (platform, league, day).
SELECT platform, league, day, count(*) AS copies
FROM marts.platform_margin_daily
GROUP BY platform, league, day
HAVING count(*) > 1
