"""A build's table models in a folder of their own, published to readers all at once.

A build writes its table models under ``<lake>/_models/build-<id>/<schema>/<name>.parquet`` and never touches
another build's files. Readers reach the models through the warehouse file's views only, and a build publishes by
writing them in one DuckDB transaction (views.sync_views), with the view ``pmw.builds`` saying which build each
table model comes from. So a reader sees the models of one publish, or of the one before, never some of each: a
build killed (or failing) before it publishes leaves the views, and the files they read, as they were. After a
publish, the build folders this host wrote that no view read before it or reads after it are removed (those of
killed builds too, and the tables of an older pmw, `_models/<schema>/`). Why, in docs/design.md, "The SQL build".
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import duckdb

from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.project import Relation
from pipeline.engine.warehouse.views import View, literal, published_files, qualified_name

MODELS_DIR = "_models"  # table models land in the lake beside the tables (`_` keeps it off table names)
BUILD_PREFIX = "build-"
BUILDS_SCHEMA, BUILDS_VIEW = "pmw", "builds"


def new_build_id(now: datetime) -> str:
    """A build's id: when it started (UTC, to the microsecond, so that ids sort as builds started even two in one
    second) and 4 random hex digits."""
    return f"{now:%Y%m%dT%H%M%S.%fZ}-{secrets.token_hex(2)}"


def table_key(build_id: str, relation: Relation) -> str:
    """The lake key of a table model's file in build `build_id`."""
    return f"{MODELS_DIR}/{BUILD_PREFIX}{build_id}/{relation.schema}/{relation.name}.parquet"


def build_of(key: str) -> str | None:
    """The build a table model's key belongs to; None for a file written before builds had folders."""
    folder = key.removeprefix(f"{MODELS_DIR}/").split("/", 1)[0]
    return folder.removeprefix(BUILD_PREFIX) if folder.startswith(BUILD_PREFIX) else None


def published_tables(warehouse_path: Path, lake: Lake) -> dict[Relation, str]:
    """The lake key of each table model the warehouse file's views show readers now ({} before the first build)."""
    prefix = f"{lake.url}/{MODELS_DIR}/"
    return {Relation(schema, name): path.removeprefix(f"{lake.url}/")
            for (schema, name), path in published_files(warehouse_path).items() if path.startswith(prefix)}


def builds_view(tables: Mapping[Relation, str]) -> View:
    """The view ``pmw.builds``: a row per table model readers see, with the build its file comes from."""
    rows = ", ".join(f"({literal(str(relation))}, {literal(build_of(key) or 'before build ids')})"
                     for relation, key in sorted(tables.items(), key=lambda item: str(item[0])))
    query = (f"SELECT * FROM (VALUES {rows}) AS t (model, build)" if rows
             else "SELECT CAST(NULL AS VARCHAR) AS model, CAST(NULL AS VARCHAR) AS build WHERE false")
    return View(BUILDS_SCHEMA, BUILDS_VIEW, query)


def shown_builds(connection: duckdb.DuckDBPyConnection) -> dict[str, str] | None:
    """Table model -> the build it comes from, as the warehouse of `connection` shows them; None when it has no
    ``pmw.builds`` (no build yet, or none since builds had ids)."""
    try:
        rows = connection.execute(f"SELECT model, build FROM {qualified_name(BUILDS_SCHEMA, BUILDS_VIEW)}").fetchall()
    except duckdb.CatalogException:
        return None
    return dict(rows)


def builds_line(builds: Mapping[str, str] | None) -> str:
    """Which build the marts are of, in a few words: the newest, and the table models of earlier builds (a model
    that failed or was not chosen keeps its last build's table)."""
    if not builds:
        return "no build published yet (pmw sql builds them)"
    newest = max(builds.values())
    older = sorted(model for model, build in builds.items() if build != newest)
    return f"build {newest}" + (f"; of earlier builds: {', '.join(older)}" if older else "")


def remove_unread_builds(lake: Lake, read: set[str | None]) -> list[str]:
    """Remove the build folders this host wrote (it stages them under the lake's local folder) whose ids are not
    in `read`, and the schema folders of the layout before build ids unless `read` holds None (a file of theirs is
    still read); return the folders removed."""
    local = lake.store.local_path(MODELS_DIR)
    found = sorted(path.name for path in local.iterdir() if path.is_dir() and not path.name.startswith(".")) \
        if local.is_dir() else []
    removed = [name for name in found if (build_of(f"{MODELS_DIR}/{name}/") if name.startswith(BUILD_PREFIX)
                                          else None) not in read]
    for name in removed:
        key = f"{MODELS_DIR}/{name}"
        lake.store.remove_tree(key)
        shutil.rmtree(lake.store.local_path(key), ignore_errors=True)  # an object store's local staging folder
    return removed
