"""Opens the partition source that the settings ask for: the APIs' extraction (`pipeline.engine.sources.factory`)
composed with the normalizers, for one platform's partitions or for the sports endpoints."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.engine.config import Settings
from pipeline.engine.normalize.partitions.kalshi import KalshiPartitions
from pipeline.engine.normalize.partitions.polymarket import PolymarketPartitions
from pipeline.engine.normalize.partitions.protocol import PartitionSource
from pipeline.engine.normalize.partitions.sports import SportsSource
from pipeline.engine.normalize.partitions.unified import UnifiedPartitions
from pipeline.engine.schema import Source
from pipeline.engine.sources.factory import Emulator, open_platform_pages, open_unified_source, price_label
from pipeline.engine.sources.kalshi import KalshiPages
from pipeline.engine.sources.sports import SportsAnswers


@contextmanager
def open_source(settings: Settings, platform: str, emulator: Emulator | None = None) -> Iterator[PartitionSource]:
    """The source of the settings, for one platform's partitions; its HTTP layers close on exit. `emulator`
    answers for the sandbox when the settings read it (`needs_emulator`)."""
    if settings.source == Source.DIRECT:
        with open_platform_pages(settings, platform, emulator) as pages:
            yield KalshiPartitions(pages) if isinstance(pages, KalshiPages) else PolymarketPartitions(pages)
    else:
        with open_unified_source(settings, emulator) as unified:
            yield UnifiedPartitions(unified, platform, settings.source.value, price_label(settings, emulator))


@contextmanager
def open_sports_source(settings: Settings, emulator: Emulator | None = None) -> Iterator[SportsSource]:
    """The sports endpoints of the unified API (PMW_SOURCE=api) or the sandbox's; the platforms' own APIs
    (PMW_SOURCE=direct) serve no sports, which raises ConfigError."""
    with open_unified_source(settings, emulator) as unified:
        yield SportsSource(SportsAnswers(unified.http), settings.source.value)
