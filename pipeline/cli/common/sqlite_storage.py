"""Dagster's SQLite storage for the runs that `pmw` makes in its own process, at a fraction of the cost per event.

Dagster's SQLite event log makes a new SQLAlchemy engine for every connection, and storing one event opens one
to three of them: no statement's compiled form is ever reused (SQLAlchemy caches them per engine), and each
event is committed with a full sync. Here each database file (a shard: the index, a run's) keeps its engine
(the most recent KEPT_ENGINES of them), so its statements compile once and its connections are pooled; a run's
new database is a copy of an empty one (Dagster makes one per run, stamping its migrations); each connection
syncs NORMALLY, which in the write-ahead-log mode Dagster sets loses no committed event when a
process dies, only on a power failure. The files, tables and rows are Dagster's own: its UI and daemon read
them as ever. `pmw_instance` uses it only where the instance keeps Dagster's default SQLite storage.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dagster
import sqlalchemy as sa
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (  # subclassed: no public API connects it
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS  # not exported: kept as Dagster's own
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage  # not exported: its event log is replaced
from dagster._serdes import ConfigurableClassData  # not exported: what the instance's storage settings are read into
from sqlalchemy.engine import Connection, Engine

KEPT_ENGINES = 4  # the index's, and the latest runs' (a run writes its own shard, then the next run's begins)
# Not *.db: Dagster lists every *.db of the directory as a run; named by Dagster's version, whose schema it holds.
RUN_SHARD_TEMPLATE = f".pmw-run-shard-{dagster.__version__}.template"
DAGSTER_SQLITE = ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage")


def _sync_normally(connection: Any, _record: Any) -> None:
    connection.execute("PRAGMA synchronous=NORMAL")


class KeptEngineEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log, each shard's engine kept (its compiled statements, its pooled connections)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        super().__init__(base_dir, inst_data)

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
            if engine is None:
                engine = sa.create_engine(self.conn_string_for_shard(shard),
                                          connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
                sa.event.listen(engine, "connect", _sync_normally)
            self._engines[shard] = engine
            while len(self._engines) > KEPT_ENGINES:
                self._engines.popitem(last=False)[1].dispose()
            return engine

    def _new_run_shard(self, shard: str) -> bool:
        """Make a run's new database as a copy of an empty one made by Dagster (RUN_SHARD_TEMPLATE, made once per
        directory): what Dagster's own making of it (its tables, then its migrations' revision stamped, at a third
        of a second a run) would leave. False when the shard is the index, or already there (Dagster checks it)."""
        path = self.path_for_shard(shard)
        if shard == INDEX_SHARD_NAME or os.path.exists(path):
            return False
        template = os.path.join(self._base_dir, RUN_SHARD_TEMPLATE)
        if not os.path.exists(template):
            making = f"{template}.{uuid.uuid4().hex}"
            engine = sa.create_engine(f"sqlite:///{making}")
            self._initdb(engine)
            engine.dispose()  # the last connection closed: the write-ahead log checkpointed into the file
            os.replace(making, template)
        copying = f"{path}.{uuid.uuid4().hex}"
        shutil.copyfile(template, copying)
        os.replace(copying, path)
        return True

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                if not self._new_run_shard(shard):
                    self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as connection, connection.begin():
                yield connection

    def has_table(self, table_name: str) -> bool:
        engine = self._engine(INDEX_SHARD_NAME)
        with engine.connect() as connection:
            return bool(engine.dialect.has_table(connection, table_name))

    def _dispose_engines(self) -> None:
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        self._dispose_engines()  # no pooled connection left on a database that is removed
        super().wipe()

    def dispose(self) -> None:
        self._dispose_engines()
        super().dispose()


class KeptEngineSqliteStorage(DagsterSqliteStorage):
    """Dagster's default SQLite storage (runs, event log, schedules under one directory), its event log kept."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(base_dir, inst_data)
        self._event_log_storage = KeptEngineEventLogStorage(self._event_log_storage._base_dir)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> KeptEngineSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)


def kept_engine_storage(storage: ConfigurableClassData | None) -> ConfigurableClassData | None:
    """The storage settings `storage` with KeptEngineSqliteStorage in place of Dagster's default SQLite storage;
    any other (PostgreSQL, a user's own) as it is."""
    if storage is None or (storage.module_name, storage.class_name) != DAGSTER_SQLITE:
        return storage
    return ConfigurableClassData(__name__, KeptEngineSqliteStorage.__name__, storage.config_yaml)
