-- Every trade's market is in marts.dim_markets.
SELECT t.platform, t.market_id, count(*) AS trades
FROM staging.stg_trades AS t
ANTI JOIN marts.dim_markets AS m
    ON m.platform = t.platform AND m.market_id = t.market_id
GROUP BY t.platform, t.market_id
