"""A pipeline resource whose source's markets answer is rewritten before it lands: a data problem on purpose."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

import polars as pl

from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.normalize.partitions.protocol import PartitionSource
from pipeline.engine.normalized import Normalized

Rewrite = Callable[[pl.DataFrame], pl.DataFrame]


class _RewrittenMarkets:
    """A source whose markets rows pass through `rewrite`; everything else is the real source's."""

    def __init__(self, source: PartitionSource, rewrite: Rewrite) -> None:
        self.source, self.rewrite = source, rewrite

    def markets(self, day: date) -> Normalized:
        result = self.source.markets(day)
        return Normalized(self.rewrite(result.rows), result.rejects)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)


def markets_rewritten(rewrite: Rewrite) -> type[PipelineResource]:
    """A `PipelineResource` class whose sources answer markets through `rewrite`."""

    class RewrittenPipeline(PipelineResource):
        @contextmanager
        def source(self, platform: str) -> Iterator[PartitionSource]:
            with super().source(platform) as source:
                yield _RewrittenMarkets(source, rewrite)  # type: ignore[misc]

    return RewrittenPipeline
