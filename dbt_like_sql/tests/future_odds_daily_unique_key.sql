-- marts.future_odds_daily has one row per (league, day, kind, future_id, outcome_key).
SELECT league, day, kind, future_id, outcome_key, count(*) AS copies
FROM marts.future_odds_daily
GROUP BY league, day, kind, future_id, outcome_key
HAVING count(*) > 1
