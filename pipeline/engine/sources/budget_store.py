"""Where request budgets are kept (PMW_BUDGET_URL): a SQLite file on this machine by default, or a PostgreSQL or
Redis server that every host of a deployment reaches (budget_postgres.py, budget_redis.py).

Every process on every host that names the same store shares one budget per API. The URL may carry a password:
it is kept in a `Secret` and shown only without its credentials (`BudgetStore.shown`). No answer of a server
store is awaited longer than PMW_BUDGET_TIMEOUT_S; every failure is one line naming the store and the cause.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from filelock import FileLock
from pyrate_limiter import AbstractBucket, Rate, SQLiteBucket

from pipeline.engine.config import BUDGET_SCHEMES, ConfigError, Secret

if TYPE_CHECKING:
    from collections.abc import Callable

SHARED_EXTRA = "pip install 'pm-warehouse[shared]'"  # the drivers of the shared stores
# PostgreSQL's refusals of a login (libpq gives them no SQLSTATE): asking again would not help.
LOGIN_REFUSALS = ("authentication failed", "does not exist", "pg_hba.conf", "permission denied")


class BudgetStoreError(RuntimeError):
    """The store of the request budget failed or did not answer; the message names it without its credentials."""


@dataclass(frozen=True)
class BudgetStore:
    """A SQLite file (`path`) or a server (`url`, postgresql:// or redis://), awaited at most `timeout_s`."""

    path: Path | None = None
    url: Secret | None = None
    timeout_s: float = 10.0  # PMW_BUDGET_TIMEOUT_S

    @classmethod
    def of(cls, budget_url: Secret | None, sqlite_path: Path, timeout_s: float = 10.0) -> BudgetStore:
        """The store that PMW_BUDGET_URL names, else the SQLite file of PMW_RATE_LIMIT_DB."""
        if budget_url is None:
            return cls(path=sqlite_path, timeout_s=timeout_s)
        if urlsplit(budget_url.value).scheme == "sqlite":
            return cls(path=Path(urlsplit(budget_url.value).path), timeout_s=timeout_s)
        return cls(url=budget_url, timeout_s=timeout_s)

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
        """What a call to the store may raise: its driver's errors, and TimeoutError past the deadline."""
        if self.scheme == "sqlite":
            return (sqlite3.Error, TimeoutError)
        if self.scheme in BUDGET_SCHEMES["redis"]:
            import redis

            return (redis.RedisError, TimeoutError)
        import psycopg

        return (psycopg.Error, TimeoutError)

    def connection_lost(self, error: Exception) -> bool:
        """Whether `error` says only that the server cannot be reached now (a restart under way): worth asking
        again until PMW_BUDGET_TIMEOUT_S has passed. A deadline that ran out, or a server that refuses the login
        (a wrong password or user), is not."""
        if self.scheme in BUDGET_SCHEMES["redis"]:
            import redis

            return isinstance(error, redis.ConnectionError) and not isinstance(error, redis.AuthenticationError)
        if self.scheme in BUDGET_SCHEMES["postgresql"]:
            import psycopg

            refused = any(sign in str(error) for sign in LOGIN_REFUSALS)
            return (isinstance(error, psycopg.OperationalError) and not refused
                    and not isinstance(error, psycopg.errors.ConnectionTimeout))
        return False

    def failure(self, error: Exception, unreachable: bool = False) -> BudgetStoreError:
        """One line naming the store and what went wrong (the driver's first line), never the store's password;
        `unreachable`: asked again until PMW_BUDGET_TIMEOUT_S ran out."""
        cause = self._without_password(str(error).strip().splitlines()[0] if str(error).strip() else "")
        cause = f"{type(error).__name__}: {cause}" if cause else type(error).__name__
        name = f"the request budget's store {self.shown}"
        if isinstance(error, TimeoutError) and self.path is not None:  # the file's lock, held by another process
            return BudgetStoreError(f"{name}: its lock {self.path}.lock was held by another process for longer than "
                                    f"{self.timeout_s:g} s (PMW_BUDGET_TIMEOUT_S)")
        if isinstance(error, TimeoutError):  # our own deadline (budget_postgres.py): nothing more to say
            return BudgetStoreError(f"{name} did not answer within {self.timeout_s:g} s (PMW_BUDGET_TIMEOUT_S)")
        if unreachable:
            return BudgetStoreError(f"{name} cannot be reached within {self.timeout_s:g} s (PMW_BUDGET_TIMEOUT_S): "
                                    f"{cause}")
        if self._timed_out(error):
            return BudgetStoreError(f"{name} did not answer within {self._bound_s(error):g} s "
                                    f"(PMW_BUDGET_TIMEOUT_S): {cause}")
        return BudgetStoreError(f"{name} failed: {cause}")

    def _timed_out(self, error: Exception) -> bool:
        if self.scheme in BUDGET_SCHEMES["redis"]:
            import redis

            return isinstance(error, redis.TimeoutError)
        if self.scheme in BUDGET_SCHEMES["postgresql"]:
            from psycopg import errors

            return isinstance(error, errors.ConnectionTimeout | errors.QueryCanceled | errors.LockNotAvailable)
        return False

    def _bound_s(self, error: Exception) -> float:
        """The deadline that ran out: PostgreSQL's connection waits whole seconds, at least 2 (libpq's rule)."""
        if self.scheme in BUDGET_SCHEMES["postgresql"]:
            from psycopg import errors

            if isinstance(error, errors.ConnectionTimeout):
                return connect_timeout_s(self.timeout_s)
        return self.timeout_s

    def open_bucket(self, key: str, rate: Rate) -> tuple[AbstractBucket, Callable[[], None]]:
        """The bucket `key` of at most `rate` in this store, and what closes its connection; the driver's errors
        as they come (RequestBudget words them with `failure`)."""
        if self.url is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            bucket = SQLiteBucket.init_from_file([rate], table=key, db_path=str(self.path), use_file_lock=True)
            # pyrate's file lock waits forever for a process that holds it (one stopped by SIGSTOP, or hung): the
            # same lock, bounded (filelock's Timeout is a TimeoutError: `failure` words it)
            bucket.lock = FileLock(f"{self.path}.lock", timeout=self.timeout_s)
            return bucket, bucket.close
        try:
            if self.scheme in BUDGET_SCHEMES["redis"]:
                from pipeline.engine.sources.budget_redis import open_redis_bucket

                return open_redis_bucket(self.url.value, key, rate, self.timeout_s)
            from pipeline.engine.sources.budget_postgres import open_postgres_bucket

            return open_postgres_bucket(self.url.value, key, rate, self.timeout_s)
        except ImportError as error:
            raise ConfigError(f"PMW_BUDGET_URL={self.shown} needs the drivers of the shared stores: "
                              f"{SHARED_EXTRA} ({error.name} is missing)") from None

    def _without_password(self, text: str) -> str:
        password = urlsplit(self.url.value).password if self.url is not None else None
        return text.replace(password, "***") if password else text


def connect_timeout_s(timeout_s: float) -> int:
    """PMW_BUDGET_TIMEOUT_S as libpq's connect_timeout: whole seconds, at least 2."""
    return max(2, math.ceil(timeout_s))
