-- Every outcome has a current price within [0, 1], and its bid and ask, when quoted, are within [0, 1].
SELECT platform, market_id, outcome_index, outcome_name, current_price, bid, ask
FROM staging.stg_market_outcomes
WHERE current_price IS NULL
    OR current_price NOT BETWEEN 0 AND 1
    OR bid NOT BETWEEN 0 AND 1
    OR ask NOT BETWEEN 0 AND 1
