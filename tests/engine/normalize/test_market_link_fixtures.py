"""The recorded cross-platform catalogues land whole through the normalizers, and the labelled pairs name
markets that exist in them."""

from __future__ import annotations

import polars as pl

from tests.support.market_link_fixtures import (
    LABELS,
    OUTCOME_MAPS,
    kalshi_normalized,
    labelled_pairs,
    polymarket_normalized,
)

MIN_PAIRS = 30


def test_both_catalogues_land_every_record_as_a_market_row() -> None:
    for normalized, expected in ((polymarket_normalized(), 34), (kalshi_normalized(), 50)):
        assert normalized.rejects.is_empty(), normalized.rejects
        assert normalized.rows.height == expected
        assert normalized.rows["title"].null_count() == 0
        assert normalized.rows["trading_end_at"].null_count() == 0


def test_every_labelled_id_is_in_its_catalogue() -> None:
    pairs = labelled_pairs()
    for column, markets in (("polymarket_id", polymarket_normalized().rows),
                            ("kalshi_id", kalshi_normalized().rows)):
        missing = set(pairs[column]) - set(markets["id"])
        assert not missing, f"{column} not in the catalogue: {sorted(missing)}"


def test_labels_are_well_formed_and_unique() -> None:
    pairs = labelled_pairs()
    assert set(pairs["label"]) <= set(LABELS)
    same = pairs.filter(pl.col("label") == "same")
    assert set(same["outcome_map"]) <= set(OUTCOME_MAPS)
    assert set(pairs.filter(pl.col("label") == "different")["outcome_map"]) == {""}
    assert pairs.select("polymarket_id", "kalshi_id").is_duplicated().sum() == 0
    assert pairs["reason"].str.len_chars().min() > 0
    # a market is the same question as at most one market of the other platform
    assert not same["polymarket_id"].is_duplicated().any()
    assert not same["kalshi_id"].is_duplicated().any()


def test_the_set_holds_enough_pairs_and_near_misses_and_labels_every_polymarket_market() -> None:
    pairs = labelled_pairs()
    assert pairs.filter(pl.col("label") == "same").height >= MIN_PAIRS
    assert pairs.filter(pl.col("label") == "different").height >= MIN_PAIRS
    # every Polymarket market is in the labelled set: linked to its Kalshi twin, or a decoy with only near misses
    assert set(pairs["polymarket_id"]) == set(polymarket_normalized().rows["id"])
