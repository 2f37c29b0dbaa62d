-- Every outcome's current price, when it has one, is within [0, 1], and so are its bid and ask, when quoted.
-- An outcome may have no price: a Kalshi market that never traded, a legacy Polymarket market whose prices
-- Gamma reset to placeholders (0 and 0) after it closed.
SELECT platform, market_id, outcome_index, outcome_name, current_price, bid, ask
FROM staging.stg_market_outcomes
WHERE current_price NOT BETWEEN 0 AND 1
    OR bid NOT BETWEEN 0 AND 1
    OR ask NOT BETWEEN 0 AND 1
