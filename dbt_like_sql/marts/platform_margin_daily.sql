-- materialized: table
-- One row per platform, league and day: the margin the platform took on its futures and awards, and how often it
-- offered the best price.
--
-- books: the futures and awards it priced; average_overround: its implied probabilities of a future summed, minus
-- 1, averaged over them (a book that leaves long shots out shows less than its margin). contested_outcomes: the
-- outcomes it priced that another platform priced too; best_price_outcomes: those where its implied probability was
-- the lowest (the highest decimal odds, the best price for a bettor; ties count for each); best_price_share: the
-- second over the first (null when it priced no contested outcome).
WITH books AS (
    SELECT league, day, platform, kind, future_id, any_value(book_sum) - 1 AS overround, count(*) AS outcomes
    FROM staging.stg_future_odds
    GROUP BY ALL
),

contested AS (
    SELECT
        league,
        day,
        platform,
        implied_probability,
        min(implied_probability) OVER outcome AS best_probability,
        count(*) OVER outcome AS platforms
    FROM staging.stg_future_odds
    WINDOW outcome AS (PARTITION BY league, day, kind, future_id, outcome_key)
),

best AS (
    SELECT
        league,
        day,
        platform,
        count(*) AS contested_outcomes,
        count(*) FILTER (WHERE implied_probability <= best_probability) AS best_price_outcomes
    FROM contested
    WHERE platforms > 1
    GROUP BY ALL
),

margins AS (
    SELECT
        league,
        day,
        platform,
        count(*) AS books,
        sum(outcomes) AS outcomes_priced,
        avg(overround) AS average_overround,
        min(overround) AS lowest_overround,
        max(overround) AS highest_overround
    FROM books
    GROUP BY ALL
)

SELECT
    m.platform,
    m.league,
    m.day,
    m.books,
    m.outcomes_priced,
    m.average_overround,
    m.lowest_overround,
    m.highest_overround,
    coalesce(b.contested_outcomes, 0) AS contested_outcomes,
    coalesce(b.best_price_outcomes, 0) AS best_price_outcomes,
    b.best_price_outcomes / b.contested_outcomes AS best_price_share
FROM margins AS m
LEFT JOIN best AS b USING (league, day, platform)
