-- Every row of marts.future_odds_daily carries a price from each platform it counts, and no null price.
SELECT league, day, kind, future_id, outcome_key, platforms, platform_prices
FROM marts.future_odds_daily
WHERE platforms <> len(platform_prices)
    OR len(list_filter(platform_prices, lambda p: p.implied_probability IS NULL OR p.fair_probability IS NULL)) > 0
