"""Runs of the code location's assets in this process: the one way a `pmw` command materialises.

The assets are those of the code location built from the command's own settings (`build_definitions`, as the
code location builds them from the environment), named by key; the run gets the command's pipeline resource (those
settings, parsed once) and instance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache

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
    `instance`; a failed step fails the run and raises nothing (the result says what failed)."""
    selection = list(keys)
    wanted = set(selection)
    location = _location(resource.settings())
    assets = [a for a in location.assets or () if isinstance(a, dg.AssetsDefinition) and not wanted.isdisjoint(a.keys)]
    unknown = wanted - {key for asset in assets for key in asset.keys}
    if unknown:
        raise ValueError(f"the code location has no asset {', '.join(sorted(k.to_user_string() for k in unknown))}")
    return dg.materialize(assets, selection=selection, partition_key=partition_key, resources={"pipeline": resource},
                          instance=instance, tags=tags, run_config=VERBOSE_LOGS if verbose else QUIET_LOGS,
                          raise_on_error=False)


@cache
def _location(settings: Settings) -> dg.Definitions:
    """The code location of `settings`, built once per process (a backfill runs many partitions of one)."""
    return build_definitions(settings)
