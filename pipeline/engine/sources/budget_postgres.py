"""The request budget on PostgreSQL: pyrate-limiter's PostgresBucket (one table per budget, the check and the insert
under one table lock) over one connection that never waits without a deadline.

Every wait is bounded by PMW_BUDGET_TIMEOUT_S: the connection by libpq's connect_timeout, each statement by
statement_timeout and lock_timeout on the server, and each transaction by a watchdog that cuts the socket of a
server that stopped answering (a frozen server cannot cancel its own statements). The session is in UTC
whatever the host's zone: the table keeps times without a zone, which sessions in other zones would read
differently. The server's clock times every request, so the hosts' own clocks do not matter.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pyrate_limiter import PostgresBucket, Rate

from pipeline.engine.sources.budget_store import connect_timeout_s

SERVER_CLOCK = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"


class DeadlinedConnection:
    """What PostgresBucket takes for a pool: `connection()` lends the one connection, opened again when it
    broke (the budget asks again while the server restarts), for one transaction that commits within
    `timeout_s` or raises TimeoutError."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self._url, self._timeout_s = url, timeout_s
        self._connection: psycopg.Connection | None = None
        self._lock = threading.Lock()
        self.closed = False

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with self._lock:
            if self._connection is None or self._connection.closed:
                self._connection = self._connect()
            connection = self._connection
            cut = threading.Event()
            watchdog = threading.Timer(self._timeout_s, _cut_socket, (connection, cut))
            watchdog.daemon = True
            watchdog.start()
            try:
                yield connection
                connection.commit()
            except BaseException as error:
                self._discard()
                if cut.is_set():
                    raise TimeoutError(f"no answer within {self._timeout_s:g} s") from error
                raise
            finally:
                watchdog.cancel()
            if cut.is_set():  # cut just as the transaction ended: its socket is gone
                self._discard()

    def _connect(self) -> psycopg.Connection:
        """The URL's own `options`, if any, then the session's zone and the statement and lock timeouts."""
        limit_ms = int(self._timeout_s * 1000)
        given = conninfo_to_dict(self._url).get("options") or ""
        ours = f"-c TimeZone=UTC -c statement_timeout={limit_ms} -c lock_timeout={limit_ms}"
        return psycopg.connect(self._url, connect_timeout=connect_timeout_s(self._timeout_s),
                               options=f"{given} {ours}".strip())

    def _discard(self) -> None:
        if self._connection is not None:
            with suppress(psycopg.Error):
                self._connection.close()
        self._connection = None

    def close(self) -> None:
        with self._lock:
            self._discard()
            self.closed = True


def _cut_socket(connection: psycopg.Connection, cut: threading.Event) -> None:
    """Shut the connection's socket down: the driver's wait for an answer ends at once with an error."""
    cut.set()
    with suppress(OSError, psycopg.Error), socket.socket(fileno=os.dup(connection.pgconn.socket)) as sock:
        sock.shutdown(socket.SHUT_RDWR)


class PostgresBudgetBucket(PostgresBucket):
    """PostgresBucket whose clock fails with the store instead of falling back to this host's clock."""

    pool: DeadlinedConnection

    def now(self) -> int:
        with self.pool.connection() as connection:
            row = connection.execute(SERVER_CLOCK).fetchone()
        assert row is not None
        return int(row[0])


def open_postgres_bucket(url: str, key: str, rate: Rate, timeout_s: float) -> tuple[PostgresBucket, Callable[[], None]]:
    """The table of budget `key` (created on first use) over one deadlined connection."""
    connection = DeadlinedConnection(url, timeout_s)
    try:
        bucket = PostgresBudgetBucket(connection, key, [rate])  # type: ignore[arg-type]  # a pool in all it uses
    except BaseException:
        connection.close()
        raise
    return bucket, bucket.close
