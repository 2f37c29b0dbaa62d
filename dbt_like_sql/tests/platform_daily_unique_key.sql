-- marts.platform_daily has one row per (platform, day).
SELECT platform, day, count(*) AS copies
FROM marts.platform_daily
GROUP BY platform, day
HAVING count(*) > 1
