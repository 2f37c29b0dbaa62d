"""Opens the APIs that the settings ask for, each host on its own HTTP layer.

Every API is reached through an `Endpoint`: the public address (or PMW_API_URL / PMW_DIRECT_URL) over the
network, with the host's request budget; or an `Emulator`'s endpoint, whose transport answers in-process. The
engine knows emulators only by this interface: the caller that chooses a source passes one in (see
pipeline/defs/common/resources.py), so a production run never loads the emulator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from pipeline.engine.config import DIRECT_SANDBOX, ConfigError, PriceLabel, Secret, Settings
from pipeline.engine.schema import Source
from pipeline.engine.sources import kalshi, polymarket
from pipeline.engine.sources.budget_store import BudgetStore
from pipeline.engine.sources.http import MIB, HttpLayer
from pipeline.engine.sources.request_budget import RequestBudget
from pipeline.engine.sources.unified import CatalogueCache, UnifiedSource

UNIFIED_API_POOL = "unified_api"
# Dagster's pool belongs to an asset, not to a partition, so the direct sources share one pool; each
# platform's own request budget (below) keeps every run, in any process, within that platform's limit.
PLATFORM_APIS_POOL = "platform_apis"


def api_pool(source: Source) -> str:
    """The Dagster pool that the ingestion assets of this source run in."""
    return PLATFORM_APIS_POOL if source == Source.DIRECT else UNIFIED_API_POOL


@dataclass(frozen=True)
class Endpoint:
    """Where one API answers: its base URL, the transport that carries requests there (None: the network), and
    the API key to send (None: no key)."""

    url: str
    transport: httpx.BaseTransport | None = None
    api_key: Secret | None = None


class Emulator(Protocol):
    """An in-process stand-in for the APIs: the sandbox (pmw_sandbox.plug) plugs in here."""

    cache_key: str  # names its catalogue in the cache, apart from any real API's
    price_label: PriceLabel  # what its price-point times stand for

    def unified(self) -> Endpoint:
        """The unified API."""
        ...

    def platform(self, path: str) -> Endpoint:
        """A platform API, at `path` under the emulator (e.g. /kalshi)."""
        ...


def needs_emulator(settings: Settings) -> bool:
    """Whether the settings read an emulator (PMW_SOURCE=sandbox, or PMW_DIRECT_URL=sandbox)."""
    return settings.source == Source.SANDBOX or (
        settings.source == Source.DIRECT and settings.direct_url == DIRECT_SANDBOX
    )


def _emulator_of(settings: Settings, emulator: Emulator | None) -> Emulator:
    if emulator is None:
        raise ConfigError(f"PMW_SOURCE={settings.source.value} (PMW_DIRECT_URL={settings.direct_url}) reads the "
                          "sandbox, but no emulator was plugged in")
    return emulator


def price_label(settings: Settings, emulator: Emulator | None) -> PriceLabel:
    """What the unified API's price-point times stand for: as set, else the emulator's reading, else the
    period's start."""
    if settings.price_point_label is not None:
        return settings.price_point_label
    if settings.source == Source.SANDBOX:
        return _emulator_of(settings, emulator).price_label
    return PriceLabel.PERIOD_START


def _request_limits(settings: Settings) -> dict[str, Any]:
    """The HttpLayer bounds and retries of the settings, the same for every API."""
    return {"timeout_s": settings.http_timeout_s, "deadline_s": settings.http_deadline_s,
            "max_body_bytes": settings.max_body_mb * MIB, "max_attempts": settings.max_attempts,
            "max_backoff_s": settings.max_backoff_s, "max_pages": settings.max_pages}


def _budget_store(settings: Settings) -> BudgetStore:
    """Where the request budgets are kept: PMW_BUDGET_URL, else the SQLite file PMW_RATE_LIMIT_DB."""
    return BudgetStore.of(settings.budget_url, settings.rate_limit_db, settings.budget_timeout_s)


@contextmanager
def open_unified_source(settings: Settings, emulator: Emulator | None = None) -> Iterator[UnifiedSource]:
    """The unified API (PMW_SOURCE=api) or the emulator's (PMW_SOURCE=sandbox)."""
    if settings.source == Source.SANDBOX:
        emulated = _emulator_of(settings, emulator)
        endpoint = emulated.unified()
        http = HttpLayer(endpoint.url, api_key=endpoint.api_key, transport=endpoint.transport,
                         **_request_limits(settings))
        cache_key = emulated.cache_key
    elif settings.source == Source.API:
        assert settings.api_url is not None  # Settings.from_env insists
        budget = RequestBudget(UNIFIED_API_POOL, settings.rate_limit_per_min, _budget_store(settings),
                               window_s=settings.rate_window_s)
        http = HttpLayer(settings.api_url, api_key=settings.api_key, budget=budget, **_request_limits(settings))
        cache_key = f"api:{hashlib.sha256(settings.api_url.encode()).hexdigest()[:16]}"
    else:
        raise ConfigError(f"PMW_SOURCE={settings.source.value} reads the platforms' APIs, not the unified API")
    cache = CatalogueCache(settings.cache_dir / "catalogue", settings.catalogue_ttl_s, settings.lock_timeout_s)
    try:
        yield UnifiedSource(http, cache, cache_key, settings.trade_lateness_s)
    finally:
        http.close()


@contextmanager
def open_platform_pages(settings: Settings, platform: str,
                        emulator: Emulator | None = None) -> Iterator[polymarket.PolymarketPages | kalshi.KalshiPages]:
    """A platform's own APIs (PMW_SOURCE=direct), each host on its HTTP layer, which close on exit: at their public
    addresses, under PMW_DIRECT_URL, or the emulator's (PMW_DIRECT_URL=sandbox)."""
    with ExitStack() as layers:

        def layer(url: str, path: str, name: str, per_window: int, window_s: float) -> HttpLayer:
            """One host's HTTP layer: its public address, or its place under PMW_DIRECT_URL (or the emulator)."""
            transport: httpx.BaseTransport | None = None
            budget: RequestBudget | None = None
            if settings.direct_url == DIRECT_SANDBOX:
                endpoint = _emulator_of(settings, emulator).platform(path)
                url, transport = endpoint.url, endpoint.transport
            else:
                url = settings.direct_url + path if settings.direct_url else url
                budget = RequestBudget(name, per_window, _budget_store(settings), window_s=window_s, margin_s=1.0)
            return layers.enter_context(
                HttpLayer(url, budget=budget, transport=transport, **_request_limits(settings))
            )

        if platform == polymarket.PLATFORM:
            window = polymarket.RATE_WINDOW_S
            yield polymarket.PolymarketPages(
                gamma=layer(polymarket.GAMMA_URL, "/polymarket/gamma", "polymarket_gamma",
                            polymarket.GAMMA_PER_WINDOW, window),
                clob=layer(polymarket.CLOB_URL, "/polymarket/clob", "polymarket_clob",
                           polymarket.CLOB_PER_WINDOW, window),
                data=layer(polymarket.DATA_URL, "/polymarket/data", "polymarket_data",
                           polymarket.DATA_PER_WINDOW, window),
            )
        elif platform == kalshi.PLATFORM:
            yield kalshi.KalshiPages(layer(kalshi.KALSHI_URL, "/kalshi", "kalshi", kalshi.PER_WINDOW,
                                            kalshi.RATE_WINDOW_S))
        else:
            raise ConfigError(
                f"PMW_SOURCE=direct reads only {polymarket.PLATFORM} and {kalshi.PLATFORM}, not {platform!r}; "
                "use PMW_SOURCE=api for it"
            )
