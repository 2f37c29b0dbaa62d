"""Build dbt_like_sql models and run their tests, without ever holding the warehouse file for long.

A build works in a private in-memory DuckDB session, writes each `table` model as a Parquet file in a folder of its
own (builds.py), and leaves only views in ``warehouse.duckdb``, written at the end in one transaction: readers see
every model of the build at once, or of the one before. Builds of a host take turns on a file lock. Why, in
docs/design.md, "The SQL build".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from pipeline.engine.config import Settings
from pipeline.engine.files import some_paths
from pipeline.engine.lake.storage import Location
from pipeline.engine.lake.store import Lake
from pipeline.engine.locks import held
from pipeline.engine.schema import lake_tables
from pipeline.engine.warehouse.builds import (
    BUILDS_SCHEMA,
    MODELS_DIR,
    build_of,
    builds_view,
    new_build_id,
    published_tables,
    remove_unread_builds,
    table_key,
)
from pipeline.engine.warehouse.market_links import links_views
from pipeline.engine.warehouse.project import Model, Project, Relation, SqlTest
from pipeline.engine.warehouse.views import View, parquet_view, qualified_name, quote_identifier, raw_views, sync_views

PREVIEW_ROWS = 5

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Built:
    model: Model
    rows: int
    columns: list[tuple[str, str]]  # (name, DuckDB type)
    seconds: float
    path: Location | None  # the Parquet file of a table model


@dataclass(frozen=True)
class NotBuilt:
    model: Model
    reason: str
    failed: bool  # True: its own SQL failed; False: skipped because something upstream failed


@dataclass(frozen=True)
class Tested:
    test: SqlTest
    failing_rows: int
    preview: pl.DataFrame
    error: str | None = None  # the test's SQL failed, so nothing is known about the rule

    @property
    def passed(self) -> bool:
        return self.error is None and self.failing_rows == 0


@dataclass(frozen=True)
class NotTested:
    test: SqlTest
    reason: str


Outcome = Built | NotBuilt | Tested | NotTested


class LakeUnreadableError(OSError):
    """The lake holds partitions that cannot be read: a build would leave their rows out of every model."""

    def __init__(self, paths: list[Location]) -> None:
        super().__init__(
            f"{len(paths)} partition path(s) of the lake cannot be read, so the models would leave their rows out: "
            f"{some_paths(paths)}; make them readable (permissions, disk) or rerun their partitions, then build again"
        )
        self.paths = paths


def build(
    project: Project, lake: Lake | Path, warehouse_path: Path, models: Iterable[Relation], tests: Iterable[SqlTest],
    lock_timeout_s: float = Settings.lock_timeout_s,
) -> Iterator[Outcome]:
    """Build ``models`` and run ``tests`` in dependency order, yielding what happened to each as it happens, then
    publish every model built to the warehouse file's readers in one step (when the generator is exhausted).

    A failed model stops the models downstream of it; so does a failed test (tests are blocking), for the
    models downstream of the model it checks. Models not chosen, or not built, are read as last published. A
    build stopped before its end (killed, or an error raised) publishes nothing. `lake`: the lake, or the folder
    of a local one. Another build of the same lake running, this one waits for it at most `lock_timeout_s`.
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    unreadable = [path for table in lake_tables() for path in lake.unreadable(table)]
    if unreadable:
        raise LakeUnreadableError(unreadable)
    output = lake.root / MODELS_DIR  # the lock, the spill and the tables being written, on this host
    output.mkdir(parents=True, exist_ok=True)
    with (held(output / ".build.lock", f"the SQL models' build of {lake.root}", lock_timeout_s),
          closing(_session(output, lake)) as session):
        for leftover in output.rglob(".*.tmp"):  # only a killed build leaves these: we hold the lock
            leftover.unlink()
        published = published_tables(warehouse_path, lake)
        run = _Run(session, project, lake, new_build_id(datetime.now(UTC)), published)
        run.define_all()
        for step in project.plan(models, tests):
            yield run.test(step) if isinstance(step, SqlTest) else run.model(step)
        views, left_out = run.define_all()
        for relation, error in left_out.items():
            logger.warning("%s is left out of the warehouse: %s", relation, error)
        if sync_views(warehouse_path, views, session, lake):
            remove_unread_builds(lake, {build_of(key) for key in [*published.values(), *run.tables.values()]})
        elif run.written:
            logger.warning("build %s is not published: %s is held by another process, whose readers see the "
                           "previous build whole; the next build publishes (pmw sql)", run.build_id, warehouse_path)


def _session(output: Path, lake: Lake) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that reads the lake, computes in UTC (days, weeks and hours are UTC) and spills under the
    lake's local folder."""
    session = duckdb.connect()
    lake.store.attach(session)
    session.execute("SET TimeZone = 'UTC'")
    session.execute("SET temp_directory = ?", [str(output / ".spill")])
    return session


class _Run:
    """One build: the session, the models that did not build, and what stops the models downstream."""

    def __init__(self, session: duckdb.DuckDBPyConnection, project: Project, lake: Lake, build_id: str,
                 published: dict[Relation, str]) -> None:
        self.session = session
        self.project = project
        self.lake = lake
        self.build_id = build_id
        # table model -> the key of its file as readers will see it: as published, then as this build writes it
        self.tables = {r: key for r, key in published.items()
                       if r in project.models and project.models[r].materialized == "table"}
        self.written: list[Relation] = []
        self.unbuilt: set[Relation] = set()  # models that failed or were skipped in this run
        self.blocking: dict[Relation, str] = {}  # model -> why the models downstream of it must not build

    def define_all(self) -> tuple[list[View], dict[Relation, str]]:
        """(Re)create the raw views and every model that can be defined now; return those views in order.

        A table model not built yet, or a model reading one, cannot be defined and is left out (returned
        with the reason), as is a model whose SQL fails: the warehouse then shows only what can be queried.
        """
        views = [*raw_views(self.lake), *links_views(self.lake)]
        for schema in sorted({view.schema for view in views} | {r.schema for r in self.project.models}
                             | {BUILDS_SCHEMA}):
            self.session.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}")
        for view in views:
            self.session.execute(view.statement)
        left_out = {}
        for model in self.project.models.values():
            view = self._view_of(model)
            if view is None:
                left_out[model.relation] = "a table model that was never built"
                continue
            try:
                self.session.execute(view.statement)
            except duckdb.Error as error:
                left_out[model.relation] = str(error).splitlines()[0]
                continue
            views.append(view)
        built = builds_view({r: key for r, key in self.tables.items() if r not in left_out})
        self.session.execute(built.statement)
        return [*views, built], left_out

    def model(self, model: Model) -> Built | NotBuilt:
        reasons = sorted({self.blocking[r] for r in self.project.upstream(model.relation) if r in self.blocking})
        if reasons:
            self._unbuilt(model, f"{model.relation} was skipped")
            return NotBuilt(model, "; ".join(reasons), failed=False)
        started = time.monotonic()
        try:
            path = self._write_table(model) if model.materialized == "table" else None
            self.session.execute(self._view_of(model).statement)  # type: ignore[union-attr]
            name = _qualified(model.relation)
            [(rows,)] = self.session.execute(f"SELECT count(*) FROM {name}").fetchall()
            columns = [(row[0], row[1]) for row in self.session.execute(f"DESCRIBE {name}").fetchall()]
        except duckdb.Error as error:
            self._unbuilt(model, f"{model.relation} failed")
            return NotBuilt(model, f"{model.path}: {error}", failed=True)
        return Built(model, rows, columns, time.monotonic() - started, path)

    def test(self, test: SqlTest) -> Tested | NotTested:
        missing = [r for r in test.reads if r in self.unbuilt]
        if missing:
            self.blocking.setdefault(test.subject, f"test {test.name} did not run")
            return NotTested(test, f"{', '.join(map(str, missing))} did not build in this run")
        query = f"FROM (\n{test.sql}\n)"  # newlines: the SQL may end with a comment
        try:
            [(failing,)] = self.session.execute(f"SELECT count(*) {query}").fetchall()
            preview = self.session.sql(f"SELECT * {query} LIMIT {PREVIEW_ROWS}").pl()
        except duckdb.Error as error:
            outcome = Tested(test, 0, pl.DataFrame(), error=f"{test.path}: {error}")
        else:
            outcome = Tested(test, failing, preview)
        if not outcome.passed:
            self.blocking.setdefault(test.subject, f"test {test.name} did not pass")
        return outcome

    def _unbuilt(self, model: Model, reason: str) -> None:
        self.unbuilt.add(model.relation)
        self.blocking[model.relation] = reason

    def _view_of(self, model: Model) -> View | None:
        """The model's view: its SELECT, or for a table model a view over its file (None if not built yet)."""
        if model.materialized == "view":
            return View(model.relation.schema, model.relation.name, model.sql)
        key = self.tables.get(model.relation)
        if key is None:
            return None
        return parquet_view(model.relation.schema, model.relation.name, self.lake.store.location(key))

    def _write_table(self, model: Model) -> Location:
        """Write the model's rows to a temporary file, fsync it, then make it the file of this build's table."""
        key = table_key(self.build_id, model.relation)
        with self.lake.replacing(key) as temporary:
            self.session.sql(model.sql).write_parquet(str(temporary), compression="zstd")
        self.tables[model.relation] = key
        self.written.append(model.relation)
        return self.lake.store.location(key)


def _qualified(relation: Relation) -> str:
    return qualified_name(relation.schema, relation.name)
