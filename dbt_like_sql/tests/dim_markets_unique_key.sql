-- marts.dim_markets has one row per (platform, market_id).
SELECT platform, market_id, count(*) AS copies
FROM marts.dim_markets
GROUP BY platform, market_id
HAVING count(*) > 1
