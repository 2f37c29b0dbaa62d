"""The pipeline resource over an in-process sandbox of any size.

``PMW_SANDBOX_*`` describe the sandbox by seed and end day only; the memory benchmark needs a world sized
for millions of trades a day, so it hands the assets this resource instead. Same assets, same HTTP layer,
same transport; no rate limit, no faults, no catalogue cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from functools import cache

from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.config import Secret
from pipeline.engine.normalize.partitions.protocol import PartitionSource
from pipeline.engine.normalize.partitions.unified import UnifiedPartitions
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.unified import UnifiedSource
from pmw_sandbox import DEFAULT_API_KEYS, SandboxApp, SandboxConfig, SandboxTransport, WorldConfig
from pmw_sandbox.transport import SANDBOX_BASE_URL


class SizedSandboxPipeline(PipelineResource):
    """A PipelineResource whose source is an in-process sandbox of the given one-day world."""

    end: str
    series_per_platform: int
    events_per_series: int
    markets_per_event: int
    trades_per_market_day: float
    seed: int = 7

    def world(self) -> WorldConfig:
        return WorldConfig(
            seed=self.seed,
            end=date.fromisoformat(self.end),
            days=1,
            series_per_platform=self.series_per_platform,
            events_per_series=self.events_per_series,
            markets_per_event=self.markets_per_event,
            trades_per_market_day=self.trades_per_market_day,
            multivariate_markets=0,
        )

    @contextmanager
    def source(self, platform: str) -> Iterator[PartitionSource]:
        transport = SandboxTransport(sandbox_app(self.world()))
        with HttpLayer(SANDBOX_BASE_URL, api_key=Secret(DEFAULT_API_KEYS[0]), transport=transport) as http:
            yield UnifiedPartitions(UnifiedSource(http, cache=None, cache_key="benchmark"), platform, "sandbox")


@cache
def sandbox_app(world: WorldConfig) -> SandboxApp:
    """One sandbox per world and process, as the pipeline's own factory keeps one."""
    return SandboxApp(SandboxConfig(world=world))
