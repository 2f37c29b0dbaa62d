"""An observation of the unified API's `/platforms` and `/health` (`sources.service_status.observe`) and its rows
of `platform_status` (`normalize.platform_status.status_rows`)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.engine.normalize.platform_status import status_rows
from pipeline.engine.raw_pages import ServiceStatus
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.service_status import observe


def observed_rows(http: HttpLayer, platforms: Sequence[str], source: str) -> tuple[ServiceStatus, pl.DataFrame]:
    """One observation, and its rows: one per platform of `platforms`; `source` is the rows' lineage."""
    status = observe(http)
    return status, status_rows(status, platforms, source)
