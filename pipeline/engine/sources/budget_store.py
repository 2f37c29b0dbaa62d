"""Where request budgets are kept (PMW_BUDGET_URL): a SQLite file on this machine by default, or a PostgreSQL or
Redis server that every host of a deployment reaches, through pyrate-limiter's own bucket for each.

Every process on every host that names the same store shares one budget per API. The URL may carry a password:
it is kept in a `Secret` and shown only without its credentials (`BudgetStore.shown`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pyrate_limiter import AbstractBucket, Rate, SQLiteBucket

from pipeline.engine.config import BUDGET_SCHEMES, ConfigError, Secret

if TYPE_CHECKING:
    from collections.abc import Callable

SHARED_EXTRA = "pip install 'pm-warehouse[shared]'"  # the drivers of the shared stores


class BudgetStoreError(RuntimeError):
    """The store of the request budget cannot be reached; the message names it without its credentials."""


@dataclass(frozen=True)
class BudgetStore:
    """A SQLite file (`path`) or a server (`url`, postgresql:// or redis://)."""

    path: Path | None = None
    url: Secret | None = None

    @classmethod
    def of(cls, budget_url: Secret | None, sqlite_path: Path) -> BudgetStore:
        """The store that PMW_BUDGET_URL names, else the SQLite file of PMW_RATE_LIMIT_DB."""
        if budget_url is None:
            return cls(path=sqlite_path)
        if urlsplit(budget_url.value).scheme == "sqlite":
            return cls(path=Path(urlsplit(budget_url.value).path))
        return cls(url=budget_url)

    @property
    def scheme(self) -> str:
        return "sqlite" if self.url is None else urlsplit(self.url.value).scheme

    @property
    def shown(self) -> str:
        """The store as it may be printed: the file, or the server's URL without user, password or query."""
        if self.url is None:
            return str(self.path)
        parts = urlsplit(self.url.value)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"

    def errors(self) -> tuple[type[Exception], ...]:
        """The errors of the store's driver: what a failed housekeeping call raises."""
        if self.scheme == "sqlite":
            return (sqlite3.Error,)
        if self.scheme in BUDGET_SCHEMES["redis"]:
            import redis

            return (redis.RedisError,)
        import psycopg

        return (psycopg.Error,)

    def open_bucket(self, key: str, rates: list[Rate]) -> tuple[AbstractBucket, Callable[[], None]]:
        """pyrate-limiter's bucket `key` in this store, and what closes its connection."""
        if self.url is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            bucket = SQLiteBucket.init_from_file(rates, table=key, db_path=str(self.path), use_file_lock=True)
            return bucket, bucket.close
        try:
            if self.scheme in BUDGET_SCHEMES["redis"]:
                return _redis_bucket(self.url.value, key, rates)
            return _postgres_bucket(self.url.value, key, rates)
        except ImportError as error:
            raise ConfigError(f"PMW_BUDGET_URL={self.shown} needs the drivers of the shared stores: "
                              f"{SHARED_EXTRA} ({error.name} is missing)") from None
        except ConfigError:
            raise
        except Exception as error:
            raise BudgetStoreError(f"the request budget's store {self.shown} cannot be reached: "
                                   f"{type(error).__name__}: {self._without_password(str(error))}") from None

    def _without_password(self, text: str) -> str:
        password = urlsplit(self.url.value).password if self.url is not None else None
        return text.replace(password, "***") if password else text


def _postgres_bucket(url: str, key: str, rates: list[Rate]) -> tuple[AbstractBucket, Callable[[], None]]:
    """One connection, in UTC whatever the host's time zone: the bucket keeps timestamps without a zone, which
    sessions in different zones would read differently. The server's clock times every request (PostgresClock),
    so the hosts' own clocks do not matter."""
    from psycopg_pool import ConnectionPool
    from pyrate_limiter import PostgresBucket

    pool = ConnectionPool(url, min_size=1, max_size=1, open=False, kwargs={"options": "-c TimeZone=UTC"})
    pool.open(wait=True, timeout=10.0)
    try:
        bucket = PostgresBucket(pool, key, rates)
    except BaseException:
        pool.close()
        raise
    return bucket, bucket.close


def _redis_bucket(url: str, key: str, rates: list[Rate]) -> tuple[AbstractBucket, Callable[[], None]]:
    """A sorted set under `pmw:<key>`. The bucket times requests by the host's wall clock: hosts sharing a Redis
    budget keep their clocks in sync (NTP), well inside the budget's margin."""
    import redis
    from pyrate_limiter import RedisBucket

    client = redis.Redis.from_url(url, socket_timeout=10.0, socket_connect_timeout=10.0)
    try:
        bucket = RedisBucket.init(rates, client, f"pmw:{key}")
    except BaseException:
        client.close()
        raise
    assert isinstance(bucket, RedisBucket)
    return bucket, client.close
