"""The dbt_like_sql project: SQL files read into models and tests, with dependencies parsed from the SQL.

Layout of the folder (``PMW_SQL_DIR``, default the repository's ``dbt_like_sql/``)::

    <schema>/<name>.sql   a model: one SELECT, built as the relation <schema>.<name> (e.g. marts.market_daily)
    tests/<name>.sql      a test: one SELECT returning the rows that break a rule (zero rows = pass)

A model's leading comment lines describe it; one of them may choose how it is built,
``-- materialized: view`` (the default) or ``-- materialized: table``. Dependencies are never written down:
they are the tables the SELECT names, minus its CTEs, so ``FROM marts.market_daily`` is all it takes to put
a new model downstream of that mart. ``raw.<table>`` names the ingested tables of ``pipeline.engine.schema``.

A test checks the first model it names; the other models it reads must be built before it runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Literal, TypeVar

import sqlglot
from sqlglot import exp

from pipeline.engine.schema import lake_tables
from pipeline.engine.schema.links import MARKET_LINKS
from pipeline.engine.warehouse.views import RAW_SCHEMA

TESTS_FOLDER = "tests"
# Beside the `pipeline` package: the checkout's folder, or the copy a wheel installs in site-packages (pyproject.toml)
DEFAULT_SQL_DIR = Path(__file__).resolve().parents[3] / "dbt_like_sql"
Materialized = Literal["view", "table"]
MATERIALIZATIONS: tuple[Materialized, ...] = ("view", "table")

Node = TypeVar("Node", bound=Hashable)

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_CONFIG_LINE = re.compile(r"--\s*materialized\s*:\s*(\S*)\s*$", re.IGNORECASE)


class SqlProjectError(ValueError):
    """A SQL file the project cannot use; the message names the file."""


@dataclass(frozen=True, order=True)
class Relation:
    """A table or view of the warehouse, ``schema.name``."""

    schema: str
    name: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def is_raw(self) -> bool:
        return self.schema == RAW_SCHEMA


# The tables the pipeline derives in Python (links.market_links), which models read like the raw tables.
DERIVED_RELATIONS = frozenset({Relation(MARKET_LINKS.schema, MARKET_LINKS.name)})


@dataclass(frozen=True)
class Model:
    """One SELECT built as the relation ``<folder>.<file name>``."""

    relation: Relation
    path: Path
    sql: str
    description: str
    materialized: Materialized
    reads: tuple[Relation, ...]  # every relation the SELECT names, raw tables included, in order of mention

    @property
    def code_version(self) -> str:
        """Changes when the SQL or the materialisation does, so the UI can flag models built from old SQL."""
        return hashlib.sha256(f"{self.materialized}\n{self.sql}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SqlTest:
    """A SELECT of the rows breaking a rule, checked on ``subject``, the first model it names."""

    name: str
    path: Path
    sql: str
    description: str
    subject: Relation
    reads: tuple[Relation, ...]  # the models it reads, subject first


@dataclass(frozen=True)
class Project:
    root: Path
    models: Mapping[Relation, Model]  # in build order: every model after the models it reads
    tests: tuple[SqlTest, ...]

    def upstream(self, relation: Relation) -> set[Relation]:
        """The models ``relation`` reads, directly or through other models."""
        found: set[Relation] = set()
        pending = [relation]
        while pending:
            for read in self.models[pending.pop()].reads:
                if read in self.models and read not in found:
                    found.add(read)
                    pending.append(read)
        return found

    def downstream(self, relation: Relation) -> set[Relation]:
        """The models that read ``relation``, directly or through other models."""
        return {other for other in self.models if relation in self.upstream(other)}

    def find(self, name: str) -> Relation:
        """The model called ``schema.name``, or ``name`` alone when only one schema has it."""
        matches = [r for r in self.models if name in (str(r), r.name)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise SqlProjectError(f"model name {name!r} is ambiguous: say one of {', '.join(map(str, matches))}")
        raise SqlProjectError(f"no model {name!r} in {self.root}; models: {', '.join(map(str, self.models))}")

    def plan(self, models: Iterable[Relation], tests: Iterable[SqlTest]) -> list[Model | SqlTest]:
        """The chosen models and tests in the order to run them.

        A test runs once the models it reads are built, and before any chosen model downstream of the
        model it checks, so that a failing test can stop those models (tests are blocking).
        """
        chosen_models, chosen_tests = set(models), list(tests)
        graph: dict[Relation | SqlTest, set[Relation | SqlTest]] = {}
        for relation in chosen_models:
            upstream = self.upstream(relation)
            graph[relation] = (upstream & chosen_models) | {t for t in chosen_tests if t.subject in upstream}
        for test in chosen_tests:
            graph[test] = set(test.reads) & chosen_models
        order = _topological(graph, lambda node: node.path if isinstance(node, SqlTest) else self.models[node].path)
        return [node if isinstance(node, SqlTest) else self.models[node] for node in order]


def load_project(root: Path) -> Project:
    """Read every ``*.sql`` file under ``root``; raise SqlProjectError naming the first unusable file."""
    root = Path(root)
    if not root.is_dir():
        raise SqlProjectError(f"SQL folder {root} does not exist (set PMW_SQL_DIR to the dbt_like_sql folder)")
    paths = sorted(root.rglob("*.sql"))
    test_paths = [p for p in paths if p.parent == root / TESTS_FOLDER]
    relations = {_relation_of(root, path): path for path in paths if path not in test_paths}
    known = set(relations) | {Relation(RAW_SCHEMA, table) for table in lake_tables()} | DERIVED_RELATIONS
    models = {}
    for relation, path in relations.items():
        sql, comments = _read(path)
        materialized, description = _header(path, comments)
        reads = _reads(path, sql, known)
        if relation in reads:
            raise SqlProjectError(f"{path}: model {relation} reads itself")
        models[relation] = Model(relation, path, sql, description, materialized, reads)
    graph = {relation: {r for r in model.reads if r in models} for relation, model in models.items()}
    ordered = Project(root, {r: models[r] for r in _topological(graph, lambda r: models[r].path)}, ())
    return Project(root, ordered.models, tuple(_test(path, ordered, known) for path in test_paths))


def _relation_of(root: Path, path: Path) -> Relation:
    parts = path.relative_to(root).parts
    if len(parts) != 2:
        raise SqlProjectError(
            f"{path}: a model must sit in a schema folder, as <schema>/<name>.sql (e.g. marts/market_daily.sql)"
        )
    relation = Relation(parts[0], path.stem)
    for label, value in (("schema folder", relation.schema), ("model name", relation.name)):
        if not _IDENTIFIER.fullmatch(value):
            raise SqlProjectError(f"{path}: {label} {value!r} must be lower case letters, digits and _")
    if relation.is_raw:
        raise SqlProjectError(f"{path}: schema {RAW_SCHEMA!r} belongs to the ingested tables; choose another folder")
    return relation


def _read(path: Path) -> tuple[str, list[str]]:
    """The SQL without trailing semicolons or blank lines, and its leading comment lines."""
    sql = path.read_text(encoding="utf-8").strip().rstrip(";").strip()
    comments = []
    for line in sql.splitlines():
        if not line.lstrip().startswith("--"):
            break
        comments.append(line.strip())
    return sql, comments


def _header(path: Path, comments: list[str]) -> tuple[Materialized, str]:
    materialized: Materialized = "view"
    description = []
    for line in comments:
        config = _CONFIG_LINE.fullmatch(line)
        if config is None:
            description.append(line.removeprefix("--").strip())
            continue
        value = config.group(1).lower()
        if value not in MATERIALIZATIONS:
            raise SqlProjectError(f"{path}: materialized must be one of {', '.join(MATERIALIZATIONS)}, got {value!r}")
        materialized = value  # type: ignore[assignment]
    return materialized, "\n".join(description).strip()


def _parse(path: Path, sql: str) -> exp.Query:
    """The file's one SELECT (or UNION, ...): anything else is an error naming the file."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.ParseError as error:
        raise SqlProjectError(f"{path}: cannot parse the SQL: {error}") from None
    if len(statements) != 1:
        raise SqlProjectError(f"{path}: expected exactly one SELECT statement, found {len(statements)} statements")
    if not isinstance(statements[0], exp.Query):
        raise SqlProjectError(f"{path}: expected a SELECT statement, found {statements[0].key.upper()}")
    return statements[0]


def _reads(path: Path, sql: str, known: set[Relation]) -> tuple[Relation, ...]:
    """The relations the SELECT names, in order of first mention, CTEs and table functions left out."""
    query = _parse(path, sql)
    ctes = {cte.alias_or_name for cte in query.find_all(exp.CTE)}
    tables = sorted(
        (t for t in query.find_all(exp.Table) if isinstance(t.this, exp.Identifier)),
        key=lambda t: t.this.meta.get("start", 0),
    )
    reads: dict[Relation, None] = {}
    for table in tables:
        if table.catalog:
            raise SqlProjectError(f"{path}: {table.sql('duckdb')}: name tables as schema.name, without a catalog")
        if not table.db:
            if table.name in ctes:
                continue
            raise SqlProjectError(
                f"{path}: table {table.name!r} needs its schema, e.g. raw.{table.name} or marts.{table.name}"
            )
        relation = Relation(table.db, table.name)
        if relation not in known:
            expected = (f"one of {', '.join(lake_tables())}" if relation.is_raw
                        else f"a model {relation.schema}/{relation.name}.sql")
            raise SqlProjectError(f"{path}: reads {relation}, which is not {expected}")
        reads[relation] = None
    return tuple(reads)


def _topological(graph: Mapping[Node, set[Node]], path_of: Callable[[Node], Path]) -> list[Node]:
    """Nodes after their dependencies, ties broken by file path so that runs are repeatable."""
    sorter = TopologicalSorter(graph)
    try:
        sorter.prepare()
    except CycleError as error:
        cycle = " -> ".join(str(path_of(node)) for node in error.args[1])
        raise SqlProjectError(f"the SQL files read each other in a cycle: {cycle}") from None
    order = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=lambda node: str(path_of(node)))
        order.extend(ready)
        sorter.done(*ready)
    return order


def _test(path: Path, project: Project, known: set[Relation]) -> SqlTest:
    sql, comments = _read(path)
    if not _IDENTIFIER.fullmatch(path.stem):
        raise SqlProjectError(f"{path}: test name {path.stem!r} must be lower case letters, digits and _")
    reads = tuple(r for r in _reads(path, sql, known) if r in project.models)
    if not reads:
        raise SqlProjectError(
            f"{path}: a test must read a model (staging.*, marts.*); raw tables have checks of their own"
        )
    subject, built_from_subject = reads[0], project.downstream(reads[0])
    for other in reads[1:]:
        if other in built_from_subject:
            raise SqlProjectError(
                f"{path}: checks {subject} (the first model it names) but also reads {other}, which is built from "
                f"{subject}; a blocking test must run before the models downstream of the one it checks"
            )
    _, description = _header(path, comments)
    return SqlTest(path.stem, path, sql, description, subject, reads)
