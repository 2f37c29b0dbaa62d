"""Runs of the code location's assets in this process: the one way a `pmw` command materialises.

The assets are those of the code location built from the command's own settings (`build_definitions`, as the
code location builds them from the environment), named by key; each run is one of the location's own job that
holds them (ingestion, sql_models, ...), so the UI lists it under that job, and gets the command's pipeline
resource (those settings, parsed once) and instance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache, lru_cache

import dagster as dg

from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.location import build_definitions
from pipeline.engine.config import Settings

# Dagster's console logger: silent by default, since each command says what went wrong in a line per run where
# Dagster would print each error with its stack trace, 90 lines a run; `verbose` prints its warnings and errors.
# Every run's full events are kept in pmw's instance (the UI's, pipeline.cli.common.instance) either way.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
VERBOSE_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def materialise(keys: Iterable[dg.AssetKey], resource: PipelineResource, instance: dg.DagsterInstance, *,
                partition_key: str | None = None, tags: Mapping[str, str] | None = None,
                verbose: bool = False) -> dg.ExecuteInProcessResult:
    """One run of the assets `keys` of the code location of `resource`'s settings, with their checks, recorded in
    `instance`; a failed step fails the run and raises nothing (the result says what failed).

    The run is what `dg.materialize` would run, but named as the smallest of the location's jobs that holds every
    asset of `keys` (ingestion, sql_models, ...), so that the UI lists it under that job."""
    wanted = frozenset(keys)
    return _job(resource, wanted).execute_in_process(
        run_config=VERBOSE_LOGS if verbose else QUIET_LOGS, instance=instance, partition_key=partition_key,
        asset_selection=sorted(wanted), tags=tags, raise_on_error=False)


@lru_cache(maxsize=8)
def _job(resource: PipelineResource, wanted: frozenset[dg.AssetKey]) -> dg.JobDefinition:
    """The job that runs `wanted` with `resource`, built once per process, resource and selection (a backfill runs
    many partitions of one: its asset graph is resolved once, not per run)."""
    assets, name = _assets_and_job(resource.settings(), wanted)
    return dg.Definitions(
        assets=assets, jobs=[dg.define_asset_job(name, selection=dg.AssetSelection.assets(*wanted))],
        resources={"pipeline": resource}, executor=dg.in_process_executor,
    ).resolve_job_def(name)


@cache
def _assets_and_job(settings: Settings, wanted: frozenset[dg.AssetKey]) -> tuple[list[dg.AssetsDefinition], str]:
    """The assets of the code location of `settings` that hold `wanted`, and the name of the smallest of its jobs
    that holds them all; ValueError naming an asset it lacks, or the assets no job holds together. Built once per
    process and selection (a backfill runs many partitions of one)."""
    location = _location(settings)
    assets = [a for a in location.assets or () if isinstance(a, dg.AssetsDefinition) and not wanted.isdisjoint(a.keys)]
    unknown = wanted - {key for asset in assets for key in asset.keys}
    if unknown:
        raise ValueError(f"the code location has no asset {', '.join(sorted(k.to_user_string() for k in unknown))}")
    holding = [job for job in location.get_repository_def().get_all_jobs()
               if not job.name.startswith("__") and wanted <= job.asset_layer.selected_asset_keys]
    if not holding:
        named = ", ".join(sorted(key.to_user_string() for key in wanted))
        raise ValueError(f"no job of the code location holds all of {named}")
    return assets, min(holding, key=lambda job: len(job.asset_layer.selected_asset_keys)).name


@cache
def _location(settings: Settings) -> dg.Definitions:
    """The code location of `settings`, built once per process (`pmw demo` runs the assets of several jobs)."""
    return build_definitions(settings)
