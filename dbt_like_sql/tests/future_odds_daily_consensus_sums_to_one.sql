-- Per future (or award) and day, the consensus probabilities of marts.future_odds_daily sum to 1 (within 1e-9).
SELECT league, day, kind, future_id, sum(consensus_probability) AS total
FROM marts.future_odds_daily
GROUP BY league, day, kind, future_id
HAVING abs(sum(consensus_probability) - 1) > 1e-9
