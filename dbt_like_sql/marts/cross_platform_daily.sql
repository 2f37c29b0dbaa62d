-- materialized: table
-- One row per linked pair of markets (links.market_links, decision `linked`: the matcher's confident links and
-- the analyst's confirmed pairs) and UTC day on which either of its two markets traded.
--
-- Prices are in the same outcome's terms, Kalshi's Yes: `kalshi_close` is the Kalshi market's close of the day
-- (its last price-history point, else its last trade; marts.market_daily), `polymarket_close` the Polymarket
-- market's, taken as 1 - its Yes price when the pair's `outcome_map` is `swapped` (Polymarket asks the opposite
-- sense: its No is Kalshi's Yes). `gap` = polymarket_close - kalshi_close, null on a day one market did not trade.
-- Volumes are each market's notional of the day in its platform's currency (sum of price x size).
-- `confidence` and `source` are the link's, so that a reader may keep the confident pairs only.
WITH pairs AS (
    SELECT polymarket_id, kalshi_id, outcome_map, confidence, source, polymarket_title, kalshi_title
    FROM links.market_links
    WHERE decision = 'linked'
),

daily AS (
    SELECT platform, market_id, day, coalesce(last_price, close_price) AS close, volume, trades
    FROM marts.market_daily
    WHERE platform IN ('polymarket', 'kalshi')
),

pair_days AS (
    SELECT DISTINCT pr.polymarket_id, pr.kalshi_id, d.day
    FROM pairs AS pr
    JOIN daily AS d
        ON (d.platform = 'polymarket' AND d.market_id = pr.polymarket_id)
        OR (d.platform = 'kalshi' AND d.market_id = pr.kalshi_id)
)

SELECT
    pd.polymarket_id,
    pd.kalshi_id,
    pd.day,
    pr.polymarket_title,
    pr.kalshi_title,
    pr.outcome_map,
    pr.confidence,
    pr.source,
    CASE WHEN pr.outcome_map = 'swapped' THEN 1 - p.close ELSE p.close END AS polymarket_close,
    k.close AS kalshi_close,
    (CASE WHEN pr.outcome_map = 'swapped' THEN 1 - p.close ELSE p.close END) - k.close AS gap,
    p.volume AS polymarket_volume,
    k.volume AS kalshi_volume,
    p.trades AS polymarket_trades,
    k.trades AS kalshi_trades
FROM pair_days AS pd
JOIN pairs AS pr ON pr.polymarket_id = pd.polymarket_id AND pr.kalshi_id = pd.kalshi_id
LEFT JOIN daily AS p ON p.platform = 'polymarket' AND p.market_id = pd.polymarket_id AND p.day = pd.day
LEFT JOIN daily AS k ON k.platform = 'kalshi' AND k.market_id = pd.kalshi_id AND k.day = pd.day
ORDER BY pd.polymarket_id, pd.kalshi_id, pd.day
