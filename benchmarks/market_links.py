"""Links: precision and recall of `links.market_links` against the truth.

The sandbox: a world planting questions listed on both platforms (paraphrased, some in the opposite sense) beside
decoys of each (another threshold, date or direction); its market records go through the pipeline's unified
normalizer into a lake, and market_links lands from it as in a run. Precision: the linked pairs that are planted
pairs with their outcome map right; recall: the planted pairs linked so; and no decoy may be linked at all.

The real labelled set (tests/fixtures/market_links/labelled_pairs.csv, recorded catalogues of both platforms
landed through the direct normalizers by tests/support/market_link_fixtures.py): precision and recall over its
pairs, when the checkout holds it.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import time
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from benchmarks.report import Report, Target
from pipeline.engine.lake.store import Lake
from pipeline.engine.links.matcher import match_markets
from pipeline.engine.links.overrides import read_overrides
from pipeline.engine.normalize.unified import normalize
from pipeline.engine.schema import Platform
from pipeline.engine.warehouse.market_links import land_market_links
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.linked_markets import planted_links
from pmw_sandbox.world import World

SEED = 7
END = date(2026, 11, 21)
MIN_PRECISION, MIN_RECALL, MIN_REAL_PRECISION = 0.95, 0.8, 0.9
REAL_LOADER = "tests.support.market_link_fixtures"
NOW = datetime(2026, 11, 22, tzinfo=UTC)
KEYS = ["polymarket_id", "kalshi_id"]


def run(quick: bool, workdir: Path) -> Report:
    config = WorldConfig(seed=SEED, end=END, days=1, series_per_platform=3 if quick else 8,
                         linked_pairs=10 if quick else 60, trades_per_market_day=2.0)
    lake_dir = workdir / "links-lake"
    shutil.rmtree(lake_dir, ignore_errors=True)
    lake = Lake(lake_dir)
    world = World(config)
    markets = 0
    for platform in (Platform.POLYMARKET, Platform.KALSHI):
        records = [world.market_record(m) for m in world.markets(platform)]
        rows = normalize("markets", records, platform=platform.value, day=END, source="sandbox", fetched_at=NOW).rows
        lake.write_partition("markets", platform.value, END, rows)
        markets += rows.height
    started = time.perf_counter()
    links = land_market_links(lake, None, NOW)
    seconds = time.perf_counter() - started
    truth = planted_links(config)
    planted = pl.DataFrame(truth.pairs, schema=[*KEYS, "outcome_map"], orient="row")
    decoys = {market_id for _platform, market_id in truth.decoys}
    sandbox = _measured(links, planted)
    decoys_linked = links.filter((pl.col("decision") == "linked")
                                 & (pl.col("polymarket_id").is_in(decoys) | pl.col("kalshi_id").is_in(decoys))).height
    rows_out = [["sandbox", markets, planted.height, len(decoys), sandbox["linked"], sandbox["right"],
                 sandbox["precision"], sandbox["recall"], decoys_linked, round(seconds, 2),
                 _verdict(sandbox["precision"] >= MIN_PRECISION and sandbox["recall"] >= MIN_RECALL
                          and decoys_linked == 0)]]
    targets = [
        Target(f"sandbox precision >= {MIN_PRECISION}", sandbox["precision"] >= MIN_PRECISION,
               f"{sandbox['precision']:.3f}"),
        Target(f"sandbox recall >= {MIN_RECALL}", sandbox["recall"] >= MIN_RECALL, f"{sandbox['recall']:.3f}"),
        Target("every decoy unlinked", decoys_linked == 0, f"{decoys_linked} of {len(decoys)} linked"),
    ]
    figures = {"sandbox": {**sandbox, "markets": markets, "decoys": len(decoys), "decoys_linked": decoys_linked,
                           "seconds": seconds}}
    notes = []
    if importlib.util.find_spec(REAL_LOADER) is None:
        notes.append(f"the real labelled set is not in this checkout ({REAL_LOADER}): not measured")
    else:
        real, labelled_markets, same, near_misses = _real()
        rows_out.append(["real (labelled)", labelled_markets, same, near_misses, real["linked"], real["right"],
                         real["precision"], real["recall"], real["near_misses_linked"], None,
                         _verdict(real["precision"] >= MIN_REAL_PRECISION)])
        targets.append(Target(f"real labelled set precision >= {MIN_REAL_PRECISION}",
                              real["precision"] >= MIN_REAL_PRECISION, f"{real['precision']:.3f}"))
        figures["real"] = real
    return Report(
        name="links",
        title="market_links against the truth: planted pairs of the sandbox, the real labelled set",
        columns=["set", "markets", "true pairs", "decoys", "linked", "right", "precision", "recall",
                 "decoys linked", "seconds", "verdict"],
        rows=rows_out, figures=figures, targets=targets, notes=notes,
    )


def _measured(links: pl.DataFrame, truth: pl.DataFrame) -> dict[str, float]:
    """Precision and recall of the linked pairs against `truth` (KEYS, outcome_map): right means the pair and its
    outcome map."""
    linked = links.filter(pl.col("decision") == "linked").select(*KEYS, "outcome_map")
    right = linked.join(truth, on=[*KEYS, "outcome_map"]).height
    return {"linked": linked.height, "right": right, "precision": right / linked.height if linked.height else 0.0,
            "recall": right / truth.height if truth.height else 0.0}


def _real() -> tuple[dict[str, float], int, int, int]:
    """The matcher over the recorded catalogues; precision over the labelled pairs it linked."""
    fixtures = importlib.import_module(REAL_LOADER)
    markets = pl.concat([fixtures.polymarket_markets(), fixtures.kalshi_markets()], how="diagonal_relaxed")
    labelled = fixtures.labelled_pairs()
    links = match_markets(markets, read_overrides(None), NOW)
    judged = links.join(labelled.select(KEYS), on=KEYS)  # the labels say nothing of the pairs they leave out
    same = labelled.filter(pl.col("label") == "same").select(*KEYS, "outcome_map")
    measured = _measured(judged, same)
    near = labelled.filter(pl.col("label") == "different").select(KEYS)
    measured["near_misses_linked"] = judged.filter(pl.col("decision") == "linked").join(near, on=KEYS).height
    return measured, markets.height, same.height, near.height


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"
