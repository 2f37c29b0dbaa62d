"""Opens the source that the settings ask for, on the shared HTTP layer."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from pipeline.config import ConfigError, Secret, Settings
from pipeline.sandbox.app import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
from pipeline.sandbox.catalogue import WorldConfig
from pipeline.sandbox.faults import Faults
from pipeline.sandbox.transport import SANDBOX_BASE_URL, SandboxTransport
from pipeline.schema import Source
from pipeline.sources.http import HttpLayer, RequestBudget
from pipeline.sources.unified import CatalogueCache, UnifiedSource

UNIFIED_API_POOL = "unified_api"


@cache
def sandbox_app(seed: int, end: object, faults: str) -> SandboxApp:
    """One in-process sandbox per world and process, shared by the runs of that process like a server."""
    world = WorldConfig(seed=seed, end=end)  # type: ignore[arg-type]
    return SandboxApp(SandboxConfig(world=world, faults=Faults.parse(faults)))


@contextmanager
def open_unified_source(settings: Settings) -> Iterator[UnifiedSource]:
    """The unified API (PMW_SOURCE=api) or the in-process sandbox (PMW_SOURCE=sandbox)."""
    if settings.source == Source.SANDBOX:
        app = sandbox_app(settings.sandbox_seed, settings.sandbox_end, settings.sandbox_faults)
        world = app.config.world
        http = HttpLayer(SANDBOX_BASE_URL, api_key=Secret(DEFAULT_API_KEYS[0]), transport=SandboxTransport(app),
                         timeout_s=settings.http_timeout_s, max_attempts=settings.max_attempts,
                         max_backoff_s=settings.max_backoff_s)
        cache_key = f"sandbox:{world.seed}:{world.end_day}:{world.days}"
    elif settings.source == Source.API:
        assert settings.api_url is not None  # Settings.from_env insists
        budget = RequestBudget(UNIFIED_API_POOL, settings.rate_limit_per_min, settings.rate_limit_db)
        http = HttpLayer(settings.api_url, api_key=settings.api_key, budget=budget,
                         timeout_s=settings.http_timeout_s, max_attempts=settings.max_attempts,
                         max_backoff_s=settings.max_backoff_s)
        cache_key = f"api:{hashlib.sha256(settings.api_url.encode()).hexdigest()[:16]}"
    else:
        raise ConfigError(f"PMW_SOURCE={settings.source.value} is not available yet; use sandbox or api")
    cache = CatalogueCache(settings.cache_dir / "catalogue", settings.catalogue_ttl_s)
    try:
        yield UnifiedSource(http, cache, cache_key)
    finally:
        http.close()
