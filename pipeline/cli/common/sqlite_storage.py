"""Dagster's SQLite storage for the runs that `pmw` makes in its own process, at a fraction of the cost per event.

Dagster's SQLite storages make a new SQLAlchemy engine for every connection (the run storage's too), and storing
one event opens one to four of them, each its own transaction: no statement's compiled form is ever reused, and
each is committed with a full sync. Here each database file keeps its engine, so its statements compile once
and its connections are pooled; an event's writes to the index are one transaction; a run's new database is a
copy of an empty one (Dagster makes one per run, stamping its migrations); each connection syncs NORMALLY, which
in the write-ahead-log mode Dagster sets loses no committed event when a process dies, only on a power failure.
A check's result is linked to its partition's latest materialisation, looked up once per partition and run.
The files, tables and rows are Dagster's own: its UI and daemon read them as ever. `pmw_instance` uses it only
where the instance keeps Dagster's default SQLite storage.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import dagster
import sqlalchemy as sa
from dagster._core.events import (  # not exported: the event types Dagster's SQLite event log mirrors in its index
    ASSET_CHECK_EVENTS,
    ASSET_EVENTS,
    EVENT_TYPE_TO_PIPELINE_RUN_STATUS,
)
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (  # subclassed: no public API connects it
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage  # subclassed, as the event log
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS  # not exported: kept as Dagster's own
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage  # not exported: its event log is replaced
from dagster._serdes import ConfigurableClassData  # not exported: what the instance's storage settings are read into
from sqlalchemy.engine import Connection, Engine

EVENT_BATCH = 1000  # events a batch holds at most (those a run plans, one per asset and check, are handed as one)
KEPT_ENGINES = 4  # the index's, and the latest runs' (a run writes its own shard, then the next run's begins)
# Not *.db: Dagster lists every *.db of the directory as a run; named by Dagster's version, whose schema it holds.
RUN_SHARD_TEMPLATE = f".pmw-run-shard-{dagster.__version__}.template"
DAGSTER_SQLITE = ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage")
INDEXED_EVENTS = frozenset({*ASSET_EVENTS, *ASSET_CHECK_EVENTS, *EVENT_TYPE_TO_PIPELINE_RUN_STATUS})
MATERIALIZATION = dagster.DagsterEventType.ASSET_MATERIALIZATION
RUN_START = dagster.DagsterEventType.RUN_START
RUN_ENDS = frozenset({dagster.DagsterEventType.RUN_SUCCESS, dagster.DagsterEventType.RUN_FAILURE,
                      dagster.DagsterEventType.RUN_CANCELED})


def _sync_normally(connection: Any, _record: Any) -> None:
    connection.execute("PRAGMA synchronous=NORMAL")


def kept_engine(conn_string: str, **connect_args: Any) -> Engine:
    """An engine for one SQLite file, to keep: its compiled statements and pooled connections reused."""
    engine = sa.create_engine(conn_string, connect_args=connect_args)
    sa.event.listen(engine, "connect", _sync_normally)
    return engine


class KeptEngineEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log, each shard's engine kept (its compiled statements, its pooled connections), an
    event's writes to the index one transaction, a partition's latest materialisation looked up once per run."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._open = threading.local()  # the shards this thread is in a transaction on: shard -> connection
        self._tables: set[str] = set()  # the index's tables known to be there (none is ever dropped while open)
        # A partition's latest materialisation as looked up during the run this process executes; None between runs.
        self._latest: dict[tuple[dagster.AssetKey, str], dagster.EventRecordsResult] | None = None
        super().__init__(base_dir, inst_data)
        self._db_lock = threading.RLock()  # an event's index transaction holds it while its run shard is written

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
            if engine is None:
                engine = kept_engine(self.conn_string_for_shard(shard), timeout=SQLITE_BUSY_TIMEOUT_SECONDS)
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
        """A connection to `shard` in a transaction: the one this thread has open on it, if any (an event's writes to
        the index share one), else a new one, committed when the outermost `_connect` of the shard ends."""
        opened: dict[str, Connection] = self._open.__dict__.setdefault("shards", {})
        if shard in opened:
            yield opened[shard]
            return
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                if not self._new_run_shard(shard):
                    self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as connection, connection.begin():
                opened[shard] = connection
                try:
                    yield connection
                finally:
                    del opened[shard]

    def store_event(self, event: dagster.EventLogEntry) -> None:
        """Dagster's own storing of `event`, its writes to the index (the event mirrored, its asset's or check's
        rows) in one transaction; a materialisation forgets its asset's latest looked up."""
        kind = event.dagster_event_type
        if kind == RUN_START:
            self._latest = {}
        elif kind in RUN_ENDS:
            self._latest = None  # outside a run, other processes' materialisations are looked up as they land
        elif kind == MATERIALIZATION and self._latest is not None:
            asset = event.get_dagster_event().asset_key
            self._latest = {key: found for key, found in self._latest.items() if key[0] != asset}
        if kind not in INDEXED_EVENTS:
            super().store_event(event)
            return
        with self._connect(INDEX_SHARD_NAME):
            super().store_event(event)

    def store_event_batch(self, events: Sequence[dagster.EventLogEntry]) -> None:
        """The events (Dagster batches those a run plans, when its instance batches events) stored as Dagster stores
        each, in one transaction on each database they are written to (a run's, the index)."""
        with ExitStack() as shards:  # the run's database committed first, then the index, as Dagster orders them
            shards.enter_context(self._connect(INDEX_SHARD_NAME))
            for shard in dict.fromkeys(event.run_id for event in events):
                shards.enter_context(self._connect(shard))
            for event in events:
                self.store_event(event)

    def fetch_materializations(self, records_filter: dagster.AssetKey | dagster.AssetRecordsFilter, limit: int,
                               cursor: str | None = None, ascending: bool = False) -> dagster.EventRecordsResult:
        """Dagster's lookup; that of a partition's latest materialisation, which Dagster makes for each check result
        (to link the result to it), made once during a run of this process until the asset materialises again."""
        partitions = records_filter.asset_partitions if isinstance(records_filter, dagster.AssetRecordsFilter) else None
        latest_of_partition = (
            isinstance(records_filter, dagster.AssetRecordsFilter) and partitions is not None and len(partitions) == 1
            and records_filter == dagster.AssetRecordsFilter(asset_key=records_filter.asset_key,
                                                             asset_partitions=partitions)
            and limit == 1 and cursor is None and not ascending)
        latest = self._latest
        if not latest_of_partition or latest is None:
            return super().fetch_materializations(records_filter, limit, cursor, ascending)
        assert isinstance(records_filter, dagster.AssetRecordsFilter) and partitions is not None
        key = (records_filter.asset_key, partitions[0])
        if key not in latest:
            latest[key] = super().fetch_materializations(records_filter, limit)
        return latest[key]

    def has_table(self, table_name: str) -> bool:
        if table_name not in self._tables:
            engine = self._engine(INDEX_SHARD_NAME)
            with engine.connect() as connection:
                if engine.dialect.has_table(connection, table_name):
                    self._tables.add(table_name)
        return table_name in self._tables

    def _dispose_engines(self) -> None:
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        self._dispose_engines()  # no pooled connection left on a database that is removed
        self._tables.clear()
        self._latest = None
        super().wipe()

    def dispose(self) -> None:
        self._dispose_engines()
        super().dispose()


class KeptEngineRunStorage(SqliteRunStorage):
    """Dagster's SQLite run storage (runs.db), its engine kept."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(conn_string, inst_data)
        self._kept = kept_engine(conn_string)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._kept.connect() as connection, connection.begin():
            yield connection

    def dispose(self) -> None:
        self._kept.dispose()
        super().dispose()


class KeptEngineSqliteStorage(DagsterSqliteStorage):
    """Dagster's default SQLite storage (runs, event log, schedules under one directory), its run storage and event
    log kept."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(base_dir, inst_data)
        self._run_storage = KeptEngineRunStorage(self._run_storage._conn_string)
        self._event_log_storage = KeptEngineEventLogStorage(self._event_log_storage._base_dir)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> KeptEngineSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)


class BatchingInstance(dagster.DagsterInstance):
    """Dagster's instance, handing the events Dagster groups in a batch (those a run plans, at its creation) to the
    storage together (`store_event_batch`: one transaction), as Dagster does when DAGSTER_EVENT_BATCH_SIZE is set."""

    def _get_event_batch_size(self) -> int:  # overridden: Dagster reads DAGSTER_EVENT_BATCH_SIZE here
        return EVENT_BATCH


BATCHING_INSTANCE = ConfigurableClassData(__name__, BatchingInstance.__name__, "{}\n")


def kept_engine_storage(storage: ConfigurableClassData | None) -> ConfigurableClassData | None:
    """The storage settings `storage` with KeptEngineSqliteStorage in place of Dagster's default SQLite storage;
    any other (PostgreSQL, a user's own) as it is."""
    if storage is None or (storage.module_name, storage.class_name) != DAGSTER_SQLITE:
        return storage
    return ConfigurableClassData(__name__, KeptEngineSqliteStorage.__name__, storage.config_yaml)
