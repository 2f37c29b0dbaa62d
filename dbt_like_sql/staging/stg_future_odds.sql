-- materialized: view
-- One row per platform's price of an outcome of a future or award on a day (league, day, kind, future_id,
-- outcome_key, platform), with the outcome's identity across platforms and the price with the margin taken out.
--
-- outcome_key: the team (`team_router_id`) for a future, whose outcomes are teams that platforms name each their own
-- way; the lower-cased name for an award, whose outcomes are players (two may play for one team).
-- book_sum: the platform's implied probabilities of the future summed (1 plus its margin, its overround);
-- fair_probability: the implied probability divided by book_sum, so that the platform's book sums to 1.
-- A platform that lists one future on two markets is read as one book (its prices of an outcome averaged).
WITH priced AS (
    SELECT
        league,
        date AS day,
        kind,
        future_id,
        platform,
        CASE WHEN kind = 'future' AND team_router_id IS NOT NULL THEN team_router_id
             ELSE lower(trim(outcome_name)) END AS outcome_key,
        outcome_name,
        team_router_id,
        implied_probability,
        decimal_odds
    FROM raw.future_odds
    WHERE implied_probability > 0
),

per_platform AS (
    SELECT
        league,
        day,
        kind,
        future_id,
        outcome_key,
        platform,
        min(outcome_name) AS outcome_name,
        min(team_router_id) AS team_router_id,
        avg(implied_probability) AS implied_probability,
        avg(decimal_odds) AS decimal_odds
    FROM priced
    GROUP BY ALL
)

SELECT
    *,
    sum(implied_probability) OVER book AS book_sum,
    implied_probability / sum(implied_probability) OVER book AS fair_probability
FROM per_platform
WINDOW book AS (PARTITION BY league, day, kind, future_id, platform)
