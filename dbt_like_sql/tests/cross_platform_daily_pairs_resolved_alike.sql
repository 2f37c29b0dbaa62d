-- A linked pair of marts.cross_platform_daily whose two markets have both resolved, differently: in Kalshi's Yes
-- terms (the Polymarket Yes price taken as 1 - it for a `swapped` pair), one paid out and the other did not.
-- Either the link is wrong (reject it in the PMW_MARKET_LINKS file) or the two platforms' rules differ in a way
-- worth reading (a deadline, a source, a rounding).
WITH pairs AS (
    SELECT DISTINCT polymarket_id, kalshi_id, outcome_map
    FROM marts.cross_platform_daily
),

settled AS (
    SELECT
        pr.polymarket_id,
        pr.kalshi_id,
        pr.outcome_map,
        p.market_title AS polymarket_title,
        k.market_title AS kalshi_title,
        CASE WHEN pr.outcome_map = 'swapped' THEN 1 - p.yes_price ELSE p.yes_price END AS polymarket_paid,
        k.yes_price AS kalshi_paid
    FROM pairs AS pr
    JOIN marts.dim_markets AS p ON p.platform = 'polymarket' AND p.market_id = pr.polymarket_id
    JOIN marts.dim_markets AS k ON k.platform = 'kalshi' AND k.market_id = pr.kalshi_id
    WHERE p.status = 'resolved' AND k.status = 'resolved'
)

SELECT *
FROM settled
WHERE abs(polymarket_paid - kalshi_paid) > 0.5
