-- Every consensus probability of marts.future_odds_daily is a number within [0, 1].
SELECT league, day, kind, future_id, outcome_key, consensus_probability
FROM marts.future_odds_daily
WHERE consensus_probability IS NULL OR isnan(consensus_probability) OR consensus_probability < 0
    OR consensus_probability > 1
