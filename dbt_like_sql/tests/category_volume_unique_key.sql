-- marts.category_volume has one row per (platform, category, week_start).
SELECT platform, category, week_start, count(*) AS copies
FROM marts.category_volume
GROUP BY platform, category, week_start
HAVING count(*) > 1
