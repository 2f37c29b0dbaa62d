"""The asset `links/market_links`: the matcher over the lake's latest markets of both platforms, with the analyst's
file (PMW_MARKET_LINKS) applied (pipeline/engine/warehouse/market_links.py). Not partitioned: each materialisation
replaces the whole set, as the catalogues it reads are the latest.

(No ``from __future__ import annotations`` here: Dagster reads the op's annotations at definition time.)
"""

from datetime import UTC, datetime

import dagster as dg
import polars as pl

from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.lake.store import Lake
from pipeline.engine.links.overrides import OverridesError
from pipeline.engine.schema.links import MARKET_LINKS, LinkDecision
from pipeline.engine.warehouse.market_links import land_market_links

MARKET_LINKS_KEY = dg.AssetKey([MARKET_LINKS.schema, MARKET_LINKS.name])


@dg.asset(
    key=MARKET_LINKS_KEY,
    deps=[dg.AssetKey("markets")],
    group_name=MARKET_LINKS.schema,
    kinds={"polars", "parquet"},
    description=MARKET_LINKS.doc,
)
def market_links(pipeline: PipelineResource) -> dg.MaterializeResult:
    settings = pipeline.settings()
    try:
        links = land_market_links(Lake.of(settings), settings.market_links_file, datetime.now(UTC))
    except OverridesError as error:
        raise dg.Failure(str(error)) from None
    decided = dict(links.group_by("decision").agg(pl.len()).iter_rows())
    return dg.MaterializeResult(metadata={
        "dagster/row_count": links.height,
        **{decision.value: int(decided.get(decision.value, 0)) for decision in LinkDecision},
    })
