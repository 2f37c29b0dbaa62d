-- materialized: view
-- One row per market and outcome, in the market's order (outcome_index 1 is yes / up / team A), with the
-- outcome's current price, bid and ask from the market's latest fetch.
WITH outcomes AS (
    SELECT
        m.platform,
        m.market_id,
        m.market_type,
        m.current_prices,
        o.outcome,
        o.outcome_index
    FROM staging.stg_markets AS m,
        unnest(m.outcomes) WITH ORDINALITY AS o (outcome, outcome_index)
)

SELECT
    platform,
    market_id,
    market_type,
    CAST(outcome_index AS INTEGER) AS outcome_index,
    outcome.id AS outcome_id,
    outcome.name AS outcome_name,
    [p.price FOR p IN current_prices IF p.key = outcome.id][1] AS current_price,
    [p.bid FOR p IN current_prices IF p.key = outcome.id][1] AS bid,
    [p.ask FOR p IN current_prices IF p.key = outcome.id][1] AS ask
FROM outcomes
