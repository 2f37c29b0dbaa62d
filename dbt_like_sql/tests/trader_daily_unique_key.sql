-- marts.trader_daily has one row per (platform, trader, day).
SELECT platform, trader, day, count(*) AS copies
FROM marts.trader_daily
GROUP BY platform, trader, day
HAVING count(*) > 1
