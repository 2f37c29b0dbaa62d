"""What `pmw sql` does: build dbt_like_sql models through Dagster, so the command line runs exactly what the UI runs.

Selection is dbt's: ``NAME`` (``marts.market_daily`` or just ``market_daily``) builds that model alone,
reading its inputs as last built; ``+NAME`` adds the models upstream of it, ``NAME+`` those downstream.
The tests of the built models run with them.

After `pmw backfill`, `rebuild_fed_models` builds the models that read what landed, unless a Dagster daemon runs
on the instance: its sensor `sql_models_after_ingestion` then rebuilds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import dagster as dg

from pipeline.cli.common.failures import root_cause
from pipeline.cli.common.instance import pmw_instance, sensor_daemon_running
from pipeline.cli.common.runs import materialise
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.sql_models.assets import OP_NAME, asset_key
from pipeline.defs.sql_models.rebuild_sensor import SENSOR_NAME
from pipeline.engine.config import Settings
from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR, Project, Relation, load_project
from pipeline.engine.warehouse.views import RAW_SCHEMA


def select_models(project: Project, selectors: Sequence[str]) -> list[Relation]:
    """The models that ``selectors`` name, in build order; every model when there are none."""
    if not selectors:
        return list(project.models)
    chosen: set[Relation] = set()
    for selector in selectors:
        relation = project.find(selector.strip("+"))
        chosen.add(relation)
        if selector.startswith("+"):
            chosen |= project.upstream(relation)
        if selector.endswith("+"):
            chosen |= project.downstream(relation)
    return [relation for relation in project.models if relation in chosen]


def models_fed_by(project: Project, tables: Iterable[str]) -> list[str]:
    """The selectors of the models that read one of the ingestion `tables`, each with the models downstream of it."""
    fed = {Relation(RAW_SCHEMA, table) for table in tables}
    return [f"{relation}+" for relation, model in project.models.items() if fed.intersection(model.reads)]


def rebuild_fed_models(tables: Iterable[str], resource: PipelineResource, instance: dg.DagsterInstance,
                       say: Callable[[str], None] = print) -> bool:
    """After a backfill that landed `tables`: the models that read them rebuilt as `run_sql` builds them, unless a
    Dagster daemon evaluates the instance's sensors (its sensor rebuilds them once ingestion is quiet). Says which;
    True unless the rebuild failed. Raises SqlProjectError for an unusable SQL file."""
    if sensor_daemon_running(instance):
        say(f"SQL models: left to the Dagster daemon running on this instance (its sensor {SENSOR_NAME})")
        return True
    selectors = models_fed_by(load_project(resource.settings().sql_dir or DEFAULT_SQL_DIR), tables)
    if not selectors:
        return True
    say("SQL models: no Dagster daemon runs on this instance, so the models fed by this backfill are rebuilt here "
        "(as `pmw sql` does; --no-models skips this)")
    return run_sql(selectors, resource, say, instance)


def run_sql(
    selectors: Sequence[str] = (),
    resource: PipelineResource | None = None,
    say: Callable[[str], None] = print,
    instance: dg.DagsterInstance | None = None,
) -> bool:
    """Build the selected models and run their tests in one Dagster run; print a line each; True if all went well.

    Raises SqlProjectError for an unusable SQL file or an unknown model name.
    """
    resource = resource or PipelineResource(base_settings=Settings.from_env())  # parsed once, here
    project = load_project(resource.settings().sql_dir or DEFAULT_SQL_DIR)
    if not project.models:
        say(f"pmw sql: no models in {project.root}")
        return True
    relations = select_models(project, selectors)
    say(f"pmw sql: {len(relations)} model(s) of {project.root} -> {resource.settings().warehouse_path}")
    result = materialise((asset_key(relation) for relation in relations), resource,
                         instance or pmw_instance(resource.settings().data_dir))
    rows = {m.asset_key: m.metadata["dagster/row_count"].value for m in result.asset_materializations_for_node(OP_NAME)}
    for relation in relations:
        model = project.models[relation]
        built = rows.get(asset_key(relation))
        say(
            f"  {relation!s:<34} {model.materialized:<6} "
            + (f"{built:>10,} rows" if built is not None else "not built (failed, or downstream of a failure)")
        )
    for check in result.get_asset_check_evaluations():
        failing = check.metadata["failing_rows"].value
        say(
            f"  {'pass' if check.passed else 'FAIL':<4} test {check.check_name} on {'.'.join(check.asset_key.path)}"
            + ("" if check.passed else f": {failing} failing rows")
        )
    for event in result.get_step_failure_events():
        failure = event.step_failure_data.user_failure_data
        if failure is not None and failure.description:
            say(f"  {failure.description}")
        else:  # not a model's failure (the warehouse cannot be opened or written): its cause, in one line
            say(f"  FAILED {event.step_key}: {root_cause(event.step_failure_data.error)}")
    return result.success
