-- materialized: table
-- One row per future (or award), outcome and day: what each platform priced it at, the consensus across platforms
-- with their margins removed, and how far apart the platforms were.
--
-- platform_prices: the platforms that priced the outcome (only those: a platform that does not list the future or
-- the outcome adds no row and no null), each with its implied probability and its fair probability (margin out,
-- see staging.stg_future_odds). consensus_probability: the mean of the platforms' fair probabilities, scaled so
-- that the future's outcomes sum to 1 (an outcome priced by one platform takes that platform's price). spread: the
-- highest platform's fair probability minus the lowest's (0 for an outcome priced by one platform).
WITH outcomes AS (
    SELECT
        league,
        day,
        kind,
        future_id,
        outcome_key,
        min(outcome_name) AS outcome_name,
        min(team_router_id) AS team_router_id,
        count(*) AS platforms,
        list({
            'platform': platform,
            'implied_probability': implied_probability,
            'fair_probability': fair_probability
        } ORDER BY platform) AS platform_prices,
        avg(fair_probability) AS mean_fair_probability,
        min(fair_probability) AS lowest_probability,
        max(fair_probability) AS highest_probability
    FROM staging.stg_future_odds
    GROUP BY league, day, kind, future_id, outcome_key
),

names AS (
    SELECT league, date AS day, 'future' AS kind, id AS future_id, any_value(future_name) AS future_name
    FROM raw.futures
    GROUP BY ALL
    UNION ALL
    SELECT league, date AS day, 'award' AS kind, id AS future_id, any_value(award_name) AS future_name
    FROM raw.awards
    GROUP BY ALL
)

SELECT
    o.league,
    o.day,
    o.kind,
    o.future_id,
    n.future_name,
    o.outcome_key,
    o.outcome_name,
    o.team_router_id,
    o.platforms,
    o.platform_prices,
    o.mean_fair_probability / sum(o.mean_fair_probability) OVER (
        PARTITION BY o.league, o.day, o.kind, o.future_id
    ) AS consensus_probability,
    o.lowest_probability,
    o.highest_probability,
    o.highest_probability - o.lowest_probability AS spread
FROM outcomes AS o
LEFT JOIN names AS n USING (league, day, kind, future_id)
