"""Opens the source that the settings ask for, for one platform, on the shared HTTP layer."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import cache

import httpx

from pipeline.engine.config import DIRECT_SANDBOX, ConfigError, PriceLabel, Secret, Settings
from pipeline.engine.schema import Source
from pipeline.engine.sources import kalshi, polymarket
from pipeline.engine.sources.http import HttpLayer, RequestBudget
from pipeline.engine.sources.partition import PartitionSource, UnifiedPartitions
from pipeline.engine.sources.unified import CatalogueCache, UnifiedSource
from pmw_sandbox.app import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.faults import Faults
from pmw_sandbox.readings import Readings
from pmw_sandbox.transport import SANDBOX_BASE_URL, SandboxTransport

UNIFIED_API_POOL = "unified_api"
# Dagster's pool belongs to an asset, not to a partition, so the direct sources share one pool; each
# platform's own request budget (below) keeps every run, in any process, within that platform's limit.
PLATFORM_APIS_POOL = "platform_apis"


def api_pool(source: Source) -> str:
    """The Dagster pool that the ingestion assets of this source run in."""
    return PLATFORM_APIS_POOL if source == Source.DIRECT else UNIFIED_API_POOL


@cache
def sandbox_app(seed: int, end: object, faults: str, readings: str = "") -> SandboxApp:
    """One in-process sandbox per world and process, shared by the runs of that process like a server."""
    world = WorldConfig(seed=seed, end=end)  # type: ignore[arg-type]
    return SandboxApp(SandboxConfig(world=world, faults=Faults.parse(faults), readings=Readings.parse(readings)))


def _settings_sandbox(settings: Settings) -> SandboxApp:
    return sandbox_app(settings.sandbox_seed, settings.sandbox_end, settings.sandbox_faults, settings.sandbox_readings)


@contextmanager
def open_source(settings: Settings, platform: str) -> Iterator[PartitionSource]:
    """The source of the settings, for one platform's partitions; its HTTP layers close on exit."""
    if settings.source == Source.DIRECT:
        with _direct_source(settings, platform) as source:
            yield source
    else:
        with open_unified_source(settings) as unified:
            yield UnifiedPartitions(unified, settings.source.value, _price_label(settings))


def _price_label(settings: Settings) -> PriceLabel:
    """What the unified API's price-point times stand for: as set, else the in-process sandbox's reading, else
    the period's start."""
    if settings.price_point_label is not None:
        return settings.price_point_label
    if settings.source == Source.SANDBOX:
        return PriceLabel(_settings_sandbox(settings).config.readings.price_label)
    return PriceLabel.PERIOD_START


@contextmanager
def open_unified_source(settings: Settings) -> Iterator[UnifiedSource]:
    """The unified API (PMW_SOURCE=api) or the in-process sandbox (PMW_SOURCE=sandbox)."""
    if settings.source == Source.SANDBOX:
        app = _settings_sandbox(settings)
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
        raise ConfigError(f"PMW_SOURCE={settings.source.value} reads the platforms' APIs, not the unified API")
    cache = CatalogueCache(settings.cache_dir / "catalogue", settings.catalogue_ttl_s)
    try:
        yield UnifiedSource(http, cache, cache_key)
    finally:
        http.close()


@contextmanager
def _direct_source(settings: Settings, platform: str) -> Iterator[PartitionSource]:
    with ExitStack() as layers:

        def layer(url: str, path: str, name: str, per_window: int, window_s: float) -> HttpLayer:
            """One host's HTTP layer: its public address, or its place under PMW_DIRECT_URL (or the sandbox)."""
            transport: httpx.BaseTransport | None = None
            budget: RequestBudget | None = None
            if settings.direct_url == DIRECT_SANDBOX:
                app = _settings_sandbox(settings)
                url, transport = SANDBOX_BASE_URL + path, SandboxTransport(app)
            else:
                url = settings.direct_url + path if settings.direct_url else url
                budget = RequestBudget(name, per_window, settings.rate_limit_db, window_s=window_s, margin_s=1.0)
            return layers.enter_context(
                HttpLayer(url, budget=budget, transport=transport, timeout_s=settings.http_timeout_s,
                          max_attempts=settings.max_attempts, max_backoff_s=settings.max_backoff_s)
            )

        if platform == polymarket.PLATFORM:
            window = polymarket.RATE_WINDOW_S
            yield polymarket.PolymarketSource(
                gamma=layer(polymarket.GAMMA_URL, "/polymarket/gamma", "polymarket_gamma",
                            polymarket.GAMMA_PER_WINDOW, window),
                clob=layer(polymarket.CLOB_URL, "/polymarket/clob", "polymarket_clob",
                           polymarket.CLOB_PER_WINDOW, window),
                data=layer(polymarket.DATA_URL, "/polymarket/data", "polymarket_data",
                           polymarket.DATA_PER_WINDOW, window),
            )
        elif platform == kalshi.PLATFORM:
            yield kalshi.KalshiSource(layer(kalshi.KALSHI_URL, "/kalshi", "kalshi", kalshi.PER_WINDOW,
                                            kalshi.RATE_WINDOW_S))
        else:
            raise ConfigError(
                f"PMW_SOURCE=direct reads only {polymarket.PLATFORM} and {kalshi.PLATFORM}, not {platform!r}; "
                "use PMW_SOURCE=api for it"
            )
