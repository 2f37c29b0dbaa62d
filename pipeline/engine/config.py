"""Settings from the environment (all optional; see the table in docs/configuration.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from pipeline.engine.schema import MARKET_PLATFORMS, Platform, Source
from pipeline.engine.watchlists import (
    ORDERBOOK_WATCHLIST,
    TRADER_WATCHLIST,
    WatchItem,
    WatchlistError,
    WatchlistKind,
    read_watchlist,
)

N = TypeVar("N", int, float)

# PMW_DIRECT_URL=sandbox reads the platform APIs from the in-process sandbox (how `pmw demo` runs direct).
DIRECT_SANDBOX = "sandbox"
# A longer range of days is read in windows of at most this many (pipeline/engine/spool/window.py), and a catalogue
# listed for a day keeps the markets of the days this many before it, for every day of the day's window.
MAX_WINDOW_DAYS = 31
SANDBOX_DAYS = 7  # days of history in the in-process sandbox's world (PMW_SANDBOX_DAYS), as WorldConfig.days
REAL_SOURCE_START = "2025-01-01"  # the first partition by default when the source is a real API
# PMW_BUDGET_URL: the URL schemes of each store of the request budget (pipeline.engine.sources.budget_store)
# PMW_LAKE_URL's object stores: each URL scheme, and the extra of pm-warehouse that installs its fsspec file system.
LAKE_SCHEMES = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure"}
BUDGET_SCHEMES = {"sqlite": ("sqlite",), "postgresql": ("postgresql", "postgres"), "redis": ("redis", "rediss")}


class PriceLabel(StrEnum):
    """What the time of a unified-API price point stands for; the spec does not say (PMW_PRICE_POINT_LABEL)."""

    PERIOD_START = "period_start"
    PERIOD_END = "period_end"


class ConfigError(ValueError):
    """A setting with a value the pipeline cannot use; the message names the variable and the value."""


@dataclass(frozen=True)
class Secret:
    """A value that must never be printed: its repr and str are masked."""

    value: str = field(repr=False)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


def _default_state_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pm-warehouse"


class BackfillOrder(StrEnum):
    """Which gaps of the history window the backfill sensor fills first."""

    NEWEST_FIRST = "newest_first"
    OLDEST_FIRST = "oldest_first"


@dataclass(frozen=True)
class AutomationSettings:
    """What the daily schedule and the backfill sensor ask for (docs/operating.md, "Running it every day"): the part
    of `Settings` that only the code location's schedules and sensors read."""

    lookback_days: int = 2  # days before yesterday that the daily run pulls again, for late trades
    backfill_start: date | None = None  # first day of the window the sensor fills; None: the first partition
    backfill_order: BackfillOrder = BackfillOrder.NEWEST_FIRST
    backfill_interval_s: int = 60  # seconds between two ticks of the backfill sensor
    daily_at: time = time(0, 30)  # when the daily schedule runs, UTC: the API has had time to take in the day's trades
    marts_interval_s: int = 30  # seconds between two looks of the SQL models' automation at what has landed
    run_retention_days: int = 30  # Dagster's finished runs older than this are deleted every day (0: none)
    scrub: bool = True  # whether the lake's scrub schedule starts on (PMW_SCRUB)
    scrub_at: time = time(3, 0)  # when it runs, UTC (PMW_SCRUB_AT)
    scrub_whole_every_days: int = 7  # a scrub reads the whole lake when the last such is this old, else what changed


@dataclass(frozen=True)
class Settings:
    """The PMW_* environment, parsed and checked once per process (`from_env`): what a run, a command and the code
    location read, the schedules' and sensors' part nested as `automation`."""

    source: Source = Source.SANDBOX
    api_url: str | None = None
    api_key: Secret | None = None
    direct_url: str | None = None  # PMW_SOURCE=direct: one base for every platform API (see DIRECT_SANDBOX)
    data_dir: Path = Path("data")
    lake_url: str | None = None  # PMW_LAKE_URL: where the lake lives; None: the folder <data_dir>/lake
    rate_limit_per_min: int = 100
    rate_window_s: float = 60.0  # the window that rate_limit_per_min counts in: a minute (tests shorten it)
    platforms: tuple[Platform, ...] = MARKET_PLATFORMS
    sandbox_seed: int = 7
    sandbox_end: date | None = None  # None: yesterday (UTC)
    sandbox_days: int = SANDBOX_DAYS
    sandbox_faults: str = ""  # fault switches of the in-process sandbox, as `pmw sandbox --faults`
    sandbox_readings: str = ""  # the in-process sandbox's readings of the spec, as `pmw sandbox --readings`
    price_point_label: PriceLabel | None = None  # None: period start, or the in-process sandbox's reading
    rate_limit_db: Path = field(default_factory=lambda: _default_state_dir() / "rate-limit.sqlite")
    budget_url: Secret | None = None  # PMW_BUDGET_URL: the budget's shared store; None: the file rate_limit_db
    budget_timeout_s: float = 10.0  # PMW_BUDGET_TIMEOUT_S: the longest wait for one answer of the budget's store
    lock_timeout_s: float = 3600.0  # PMW_LOCK_TIMEOUT_S: the longest wait for a lock another process holds
    catalogue_ttl_s: float = 3600.0
    http_timeout_s: float = 30.0
    http_deadline_s: float = 120.0  # a request's whole answer, however slowly it trickles in
    lake_deadline_s: float = 300.0  # one object-store operation (an object read or written whole), its retries included
    max_body_mb: int = 64  # a decoded answer's largest size
    max_pages: int = 20_000  # the most pages one listing may take: past it, the server never says it is done
    max_attempts: int = 8
    max_backoff_s: float = 60.0  # cap on one retry wait, even when the server asks for longer
    shrink_tolerance: float = 0.05  # share of a landed partition's rows a rerun may lose (lake.replacement)
    max_reject_share: float = 0.5  # share of a partition's records that may be rejected
    allow_shrink: bool = False  # let reruns shrink partitions, to empty included (a deliberate correction)
    keep_versions: int = 3  # replaced versions of each partition the lake keeps for `pmw restore` (0: none)
    orderbook_watchlist: tuple[WatchItem, ...] = ()  # PMW_ORDERBOOK_WATCHLIST's markets, snapshotted every round
    trader_watchlist: tuple[WatchItem, ...] = ()  # PMW_TRADER_WATCHLIST's traders
    orderbook_every_min: int = 60  # minutes between snapshot rounds (PMW_ORDERBOOK_EVERY_MIN)
    orderbook_top_n: int = 20  # busiest open markets of Polymarket and Kalshi snapshotted each round
    trade_lateness_s: float = 3600.0  # how late a server may record a trade: trade paging stops this far past a day
    start_date: date | None = None  # PMW_START_DATE: the first daily partition; None: where the data starts
    sql_dir: Path | None = None  # PMW_SQL_DIR: the folder of the SQL models and tests; None: the repository's
    market_links_file: Path | None = None  # PMW_MARKET_LINKS: the analyst's confirmed and rejected market pairs
    automation: AutomationSettings = field(default_factory=AutomationSettings)

    @property
    def reads_sandbox(self) -> bool:
        """Whether the source is the in-process sandbox: PMW_SOURCE=sandbox, or direct with PMW_DIRECT_URL=sandbox."""
        return self.source == Source.SANDBOX or (self.source == Source.DIRECT and self.direct_url == DIRECT_SANDBOX)

    @property
    def sandbox_first_day(self) -> date:
        """The first day of the in-process sandbox's world: `sandbox_days` days up to `sandbox_end` (yesterday)."""
        end = self.sandbox_end or datetime.now(UTC).date() - timedelta(days=1)
        return end - timedelta(days=self.sandbox_days - 1)

    @property
    def first_day(self) -> date:
        """The first day of the daily partitions: PMW_START_DATE, else where the data starts (the sandbox world's
        first day when the source is the in-process sandbox, else REAL_SOURCE_START)."""
        if self.start_date is not None:
            return self.start_date
        return self.sandbox_first_day if self.reads_sandbox else date.fromisoformat(REAL_SOURCE_START)

    @property
    def backfill_start(self) -> date:
        """The first day of the window the backfill sensor fills (PMW_BACKFILL_START, else the first partition)."""
        return self.automation.backfill_start or self.first_day

    def check_credentials(self) -> None:
        """ConfigError when PMW_SOURCE=api lacks the URL or the key of the unified API."""
        if self.source == Source.API:
            if self.api_url is None:
                raise ConfigError("PMW_SOURCE=api needs PMW_API_URL, the base URL of the unified API")
            if self.api_key is None:
                raise ConfigError("PMW_SOURCE=api needs PMW_API_KEY, the value of the X-API-Key header")

    @property
    def lake_dir(self) -> Path:
        return self.data_dir / "lake"

    @property
    def warehouse_path(self) -> Path:
        return self.data_dir / "warehouse.duckdb"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def windows_dir(self) -> Path:
        """Where a window's sweep waits for its days to land (pipeline.engine.spool.window)."""
        return self.data_dir / "windows"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, credentials: bool = True,
                 overrides: Mapping[str, str] | None = None) -> Settings:
        """The settings of `env` (the process's environment) with `overrides` over it, every value checked;
        ConfigError naming the first bad one. Without `credentials`, PMW_SOURCE=api does not need its URL and key (a
        command that never calls the source: `pmw query`; the code location, whose runs check them as they start)."""
        env = {**(os.environ if env is None else env), **(overrides or {})}
        source = _source(env)
        api_url = env.get("PMW_API_URL") or None
        key = env.get("PMW_API_KEY") or None
        if source == Source.API and credentials:
            cls(source=source, api_url=api_url, api_key=Secret(key) if key else None).check_credentials()
        if api_url is not None and not api_url.startswith(("http://", "https://")):
            raise ConfigError(f"PMW_API_URL must start with http:// or https://, got {api_url!r}")
        direct_url = env.get("PMW_DIRECT_URL") or None
        if direct_url is not None and direct_url != DIRECT_SANDBOX and not direct_url.startswith(
            ("http://", "https://")
        ):
            raise ConfigError(
                f"PMW_DIRECT_URL must start with http:// or https://, or be {DIRECT_SANDBOX!r}, got {direct_url!r}"
            )
        defaults = cls()
        settings = cls(
            source=source,
            api_url=api_url.rstrip("/") if api_url else None,
            api_key=Secret(key) if key else None,
            direct_url=direct_url.rstrip("/") if direct_url else None,
            data_dir=Path(env.get("PMW_DATA_DIR") or defaults.data_dir),
            lake_url=lake_url(env),
            rate_limit_per_min=_integer(env, "PMW_RATE_LIMIT_PER_MIN", defaults.rate_limit_per_min),
            rate_window_s=_seconds(env, "PMW_RATE_WINDOW_S", defaults.rate_window_s, positive=True),
            platforms=_platforms(env.get("PMW_PLATFORMS")),
            sandbox_seed=_integer(env, "PMW_SANDBOX_SEED", defaults.sandbox_seed, minimum=0),
            sandbox_end=_day(env, "PMW_SANDBOX_END"),
            sandbox_days=_integer(env, "PMW_SANDBOX_DAYS", defaults.sandbox_days),
            sandbox_faults=env.get("PMW_SANDBOX_FAULTS", ""),
            sandbox_readings=env.get("PMW_SANDBOX_READINGS", ""),
            price_point_label=_price_label(env),
            rate_limit_db=Path(env.get("PMW_RATE_LIMIT_DB") or defaults.rate_limit_db),
            budget_url=_budget_url(env),
            budget_timeout_s=_seconds(env, "PMW_BUDGET_TIMEOUT_S", defaults.budget_timeout_s, positive=True),
            lock_timeout_s=_seconds(env, "PMW_LOCK_TIMEOUT_S", defaults.lock_timeout_s, positive=True),
            keep_versions=_integer(env, "PMW_KEEP_VERSIONS", defaults.keep_versions, minimum=0),
            catalogue_ttl_s=float(_integer(env, "PMW_CATALOGUE_TTL_S", int(defaults.catalogue_ttl_s), minimum=0)),
            http_timeout_s=_seconds(env, "PMW_HTTP_TIMEOUT_S", defaults.http_timeout_s, positive=True),
            http_deadline_s=_seconds(env, "PMW_HTTP_DEADLINE_S", defaults.http_deadline_s, positive=True),
            lake_deadline_s=_seconds(env, "PMW_LAKE_DEADLINE_S", defaults.lake_deadline_s, positive=True),
            max_body_mb=_integer(env, "PMW_MAX_BODY_MB", defaults.max_body_mb),
            max_pages=_integer(env, "PMW_MAX_PAGES", defaults.max_pages),
            max_attempts=_integer(env, "PMW_MAX_ATTEMPTS", defaults.max_attempts),
            max_backoff_s=_seconds(env, "PMW_MAX_BACKOFF_S", defaults.max_backoff_s),
            shrink_tolerance=_shrink_tolerance(env),
            max_reject_share=_share(env, "PMW_MAX_REJECT_SHARE", defaults.max_reject_share),
            allow_shrink=_flag(env, "PMW_ALLOW_SHRINK"),
            orderbook_watchlist=_watchlist(env, ORDERBOOK_WATCHLIST),
            trader_watchlist=_watchlist(env, TRADER_WATCHLIST),
            orderbook_every_min=_round_minutes(env),
            orderbook_top_n=_integer(env, "PMW_ORDERBOOK_TOP_N", defaults.orderbook_top_n, minimum=0),
            trade_lateness_s=_seconds(env, "PMW_TRADE_LATENESS_S", defaults.trade_lateness_s),
            start_date=_day(env, "PMW_START_DATE"),
            sql_dir=Path(env["PMW_SQL_DIR"]) if env.get("PMW_SQL_DIR") else None,
            market_links_file=_market_links_file(env),
            automation=_automation(env),
        )
        if settings.backfill_start < settings.first_day:
            raise ConfigError(f"PMW_BACKFILL_START must not be before PMW_START_DATE ({settings.first_day}), the "
                              f"first partition; got {settings.backfill_start}")
        return settings


def check_data_dir(data_dir: Path, *, writable: bool) -> None:
    """ConfigError when PMW_DATA_DIR (`data_dir`) is a file, or, when the command writes there (`writable`), when
    it is not a folder this process can write, nor one it can make."""
    shown = f"PMW_DATA_DIR must be a folder{' this user can write' if writable else ''}, got {str(data_dir)!r}"
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"{shown}, which is a file")
    if not writable:
        return
    existing = next(folder for folder in (data_dir, *data_dir.absolute().parents) if folder.exists())
    if not existing.is_dir():
        raise ConfigError(f"{shown}, inside {str(existing)!r}, which is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{shown}{'' if existing == data_dir else f', inside {str(existing)!r}'}, "
                          "which is not writable")


def _source(env: Mapping[str, str]) -> Source:
    raw = env.get("PMW_SOURCE")
    if not raw:
        return Source.SANDBOX
    try:
        return Source(raw)
    except ValueError:
        allowed = ", ".join(member.value for member in Source)
        raise ConfigError(f"PMW_SOURCE must be one of {allowed}, got {raw!r}") from None


def lake_url(env: Mapping[str, str]) -> str | None:
    """PMW_LAKE_URL, checked: ``file:///ABSOLUTE/PATH``, or an object store's ``s3://``, ``gs://`` (``gcs://``) or
    ``az://`` (``abfs://``) URL naming a bucket (or container), optionally with a prefix; None when unset."""
    raw = (env.get("PMW_LAKE_URL") or "").rstrip("/")
    if not raw:
        return None
    scheme, separator, rest = raw.partition("://")
    if separator and scheme == "file" and rest.startswith("/"):
        return raw
    if separator and scheme in LAKE_SCHEMES and rest and not rest.startswith("/"):
        return raw
    raise ConfigError(
        "PMW_LAKE_URL must be file:///ABSOLUTE/PATH or s3://BUCKET[/PREFIX] (gs://, az:// alike), got "
        f"{raw.split('@')[-1]!r}"
    )


def _budget_url(env: Mapping[str, str]) -> Secret | None:
    """PMW_BUDGET_URL, checked for a known store; it may hold a password, so it is kept as a Secret and never
    quoted whole in an error."""
    raw = env.get("PMW_BUDGET_URL")
    if not raw:
        return None
    scheme, separator, rest = raw.partition("://")
    known = [name for names in BUDGET_SCHEMES.values() for name in names]
    if not separator or scheme not in known or not rest:
        shown = f"a URL of scheme {scheme!r}" if separator else "no URL"
        raise ConfigError(f"PMW_BUDGET_URL must be sqlite:///FILE, postgresql://... or redis://..., got {shown}")
    if scheme == "sqlite" and not rest.startswith("/"):
        raise ConfigError("PMW_BUDGET_URL=sqlite:///FILE names a file by its absolute path (three slashes)")
    return Secret(raw)


def _price_label(env: Mapping[str, str]) -> PriceLabel | None:
    raw = env.get("PMW_PRICE_POINT_LABEL")
    if not raw:
        return None
    try:
        return PriceLabel(raw)
    except ValueError:
        allowed = ", ".join(member.value for member in PriceLabel)
        raise ConfigError(f"PMW_PRICE_POINT_LABEL must be one of {allowed}, got {raw!r}") from None


def _number(env: Mapping[str, str], name: str, parse: Callable[[str], N], expected: str) -> N | None:
    """The variable parsed with `parse`, None when unset or empty; ConfigError naming it and `expected`."""
    raw = env.get(name)
    if not raw:
        return None
    try:
        return parse(raw)
    except ValueError:
        raise ConfigError(f"{name} must be {expected}, got {raw!r}") from None


def _integer(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    value = _number(env, name, int, "a whole number")
    if value is None:
        return default
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def _seconds(env: Mapping[str, str], name: str, default: float, *, positive: bool = False) -> float:
    value = _number(env, name, float, "a number of seconds")
    if value is None:
        return default
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{name} must be {'more than 0' if positive else 'at least 0'}, got {value}")
    return value


def _watchlist(env: Mapping[str, str], kind: WatchlistKind) -> tuple[WatchItem, ...]:
    """The watch list the variable names (an empty tuple when unset); ConfigError naming the file and line."""
    raw = env.get(kind.variable)
    if not raw:
        return ()
    try:
        return read_watchlist(Path(raw), kind)
    except WatchlistError as error:
        raise ConfigError(str(error)) from None


def _market_links_file(env: Mapping[str, str]) -> Path | None:
    """PMW_MARKET_LINKS: the analyst's file of market pairs (read at each landing of market_links, so that an edit
    counts at the next); it may not exist yet (`pmw links --append` creates it), but it may not be a folder."""
    raw = env.get("PMW_MARKET_LINKS")
    if not raw:
        return None
    path = Path(raw)
    if path.exists() and not path.is_file():
        raise ConfigError(f"PMW_MARKET_LINKS must name a file of polymarket_id,kalshi_id,verdict lines, got the "
                          f"folder {path}")
    return path


def _round_minutes(env: Mapping[str, str]) -> int:
    """PMW_ORDERBOOK_EVERY_MIN: minutes between snapshot rounds, which must tile the UTC day evenly (a round at
    the same times every day, the first at midnight) so that a schedule can say it as a cron expression."""
    name = "PMW_ORDERBOOK_EVERY_MIN"
    value = _integer(env, name, Settings.orderbook_every_min)
    tiles_hour = value < 60 and 60 % value == 0
    tiles_day = value % 60 == 0 and 24 % (value // 60) == 0 and value <= 1440
    if not (tiles_hour or tiles_day):
        raise ConfigError(f"{name} must divide an hour (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30) or be a whole number "
                          f"of hours dividing a day (60, 120, 180, 240, 360, 480, 720, 1440), got {value}")
    return value


def _share(env: Mapping[str, str], name: str, default: float) -> float:
    value = _number(env, name, float, "a share between 0 and 1")
    if value is None:
        return default
    if not 0 <= value <= 1:
        raise ConfigError(f"{name} must be a share between 0 and 1, got {value}")
    return value


def _shrink_tolerance(env: Mapping[str, str]) -> float:
    if "PMW_MAX_SHRINK" in env:  # the same fact under its former name: one setting, not two
        raise ConfigError("PMW_MAX_SHRINK is now PMW_SHRINK_TOLERANCE (a share between 0 and 1, default "
                          f"{Settings.shrink_tolerance:g}): rename it, got PMW_MAX_SHRINK={env['PMW_MAX_SHRINK']!r}")
    return _share(env, "PMW_SHRINK_TOLERANCE", Settings.shrink_tolerance)


def _flag(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in ("0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise ConfigError(f"{name} must be 1 or 0 (true or false), got {env.get(name)!r}")


def _day(env: Mapping[str, str], name: str) -> date | None:
    raw = env.get(name)
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a day as YYYY-MM-DD, got {raw!r}") from None


def _time_of_day(env: Mapping[str, str], name: str) -> time | None:
    raw = env.get(name)
    if not raw:
        return None
    try:
        hour, minute = (int(part) for part in raw.split(":"))
        return time(hour, minute)
    except ValueError:
        raise ConfigError(f"{name} must be a time of day as HH:MM (UTC), got {raw!r}") from None


def _automation(env: Mapping[str, str]) -> AutomationSettings:
    defaults = AutomationSettings()
    return AutomationSettings(
        lookback_days=_integer(env, "PMW_LOOKBACK_DAYS", defaults.lookback_days, minimum=0),
        backfill_start=_day(env, "PMW_BACKFILL_START"),
        backfill_order=_backfill_order(env),
        backfill_interval_s=_integer(env, "PMW_BACKFILL_INTERVAL_S", defaults.backfill_interval_s),
        daily_at=_time_of_day(env, "PMW_DAILY_AT") or defaults.daily_at,
        marts_interval_s=_integer(env, "PMW_MARTS_INTERVAL_S", defaults.marts_interval_s),
        run_retention_days=_integer(env, "PMW_RUN_RETENTION_DAYS", defaults.run_retention_days, minimum=0),
        scrub=_flag(env, "PMW_SCRUB", default=defaults.scrub),
        scrub_at=_time_of_day(env, "PMW_SCRUB_AT") or defaults.scrub_at,
        scrub_whole_every_days=_integer(env, "PMW_SCRUB_WHOLE_EVERY_DAYS", defaults.scrub_whole_every_days),
    )


def _backfill_order(env: Mapping[str, str]) -> BackfillOrder:
    raw = env.get("PMW_BACKFILL_ORDER")
    if not raw:
        return BackfillOrder.NEWEST_FIRST
    try:
        return BackfillOrder(raw)
    except ValueError:
        allowed = ", ".join(member.value for member in BackfillOrder)
        raise ConfigError(f"PMW_BACKFILL_ORDER must be one of {allowed}, got {raw!r}") from None


def _platforms(raw: str | None) -> tuple[Platform, ...]:
    if not raw:
        return MARKET_PLATFORMS
    chosen = []
    for name in (part.strip() for part in raw.split(",")):
        if name not in MARKET_PLATFORMS:
            allowed = ", ".join(MARKET_PLATFORMS)
            raise ConfigError(f"PMW_PLATFORMS: unknown platform {name!r}; expected a comma list of {allowed}")
        if Platform(name) not in chosen:
            chosen.append(Platform(name))
    return tuple(chosen)


def variable_set(name: str) -> bool:
    """Whether the process's environment gives the variable `name` a value."""
    return bool(os.environ.get(name))


def dagster_home() -> Path | None:
    """DAGSTER_HOME: the Dagster instance's folder, None when unset."""
    raw = os.environ.get("DAGSTER_HOME")
    return Path(raw) if raw else None



def lake_url_from_env() -> str | None:
    """PMW_LAKE_URL alone, checked (`pmw query` and `pmw shell`, which read a warehouse file wherever it lies)."""
    return lake_url(os.environ)


def variables_with_prefix(prefixes: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The environment's variables whose names start with one of `prefixes`, sorted: the object stores' clients read
    their endpoint, credentials and region from them (pipeline.engine.lake.storage)."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(prefixes)))
