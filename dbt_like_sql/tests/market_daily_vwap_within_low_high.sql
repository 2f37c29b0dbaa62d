-- The volume-weighted average price lies between the day's low and high (to rounding: 1e-9).
SELECT platform, market_id, day, low_price, vwap, high_price
FROM marts.market_daily
WHERE vwap < low_price - 1e-9
    OR vwap > high_price + 1e-9
    OR (vwap IS NULL) <> (low_price IS NULL)
