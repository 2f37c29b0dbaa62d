"""Python's cyclic garbage collector run once a chunk while a stream of normalized chunks is landed or spooled."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

GC_THRESHOLDS = (100_000, 10, 10)  # Python's are (700, 10, 10): see cyclic_gc_per_chunk


@contextmanager
def cyclic_gc_per_chunk() -> Iterator[None]:
    """Run Python's cyclic garbage collector once a chunk, on what the stream made, instead of on its own.

    A chunk is hundreds of thousands of small dicts, lists and strings, parsed a page at a time, and at the
    default thresholds the collector goes through them again and again, in vain (JSON is a tree): parsing
    is 1.5 times faster without that (benchmarks/README.md). It cannot simply be switched off: every request
    leaves a little cyclic garbage (httpx's request and response, tenacity's retry state) that keeps the
    page it fetched alive until the collector frees it. So while the stream runs, the collector is left
    to its thresholds only rarely (``GC_THRESHOLDS``) and the stream collects after each chunk
    (`pipeline.engine.lake.stream`); the heap from before the stream is frozen, so that those collections go
    through the new objects only.
    Within another stream's (a window's sweep runs inside the landing of its first day), it changes nothing:
    unfreezing there would thaw the outer heap, and every later collection would go through all of it.
    """
    if gc.get_freeze_count():
        yield
        return
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()
