"""Imported once by the fork server of tests.support.warm: the pipeline's command line and Dagster, warmed.

Importing `dagster` leaves much to the first run: the rest of its execution machinery and SQLAlchemy's
compiled statements for the run and event storages. Here two trivial assets shaped like the pipeline's
(partitioned by platform and day, one depending on the other, each with a check and metadata) are
materialised once, so that forked backfills start with all of that loaded. Nothing here may start a
thread, Python's or native: a forked child gets none of the parent's threads, so a thread pool started here
(polars' or DuckDB's, for instance) would deadlock the children that use it. That is why the warm-up does
not run the pipeline itself.
"""

from __future__ import annotations

import importlib

import dagster as dg

# Imported for their import cost, paid here once.
import pipeline.cli.backfill.partitions
import pipeline.cli.common.runs
import pipeline.cli.main

# And what a backfill imports on its way: the TLS context's certificates, pyarrow's compute functions, numpy's random
# and masked arrays, the query command.
for _module in ("certifi", "numpy.ma", "numpy.random", "pyarrow.compute", "pipeline.cli.query.warehouse"):
    importlib.import_module(_module)

_PARTITIONS = dg.MultiPartitionsDefinition({
    "platform": dg.StaticPartitionsDefinition(["warm"]),
    "date": dg.DailyPartitionsDefinition(start_date="2026-01-01"),
})


def _result(name: str) -> dg.MaterializeResult:
    check = dg.AssetCheckResult(check_name="ok", passed=True, severity=dg.AssetCheckSeverity.ERROR,
                                metadata={"violations": 0})
    return dg.MaterializeResult(metadata={"dagster/row_count": 1, "preview": dg.MetadataValue.md(f"| {name} |")},
                                check_results=[check])


@dg.asset(partitions_def=_PARTITIONS, check_specs=[dg.AssetCheckSpec("ok", asset="warm_first", blocking=True)])
def warm_first() -> dg.MaterializeResult:
    """Nothing: materialised once to load what a partitioned run with checks loads."""
    return _result("warm_first")


@dg.asset(partitions_def=_PARTITIONS, deps=[warm_first], check_specs=[dg.AssetCheckSpec("ok", asset="warm_second")])
def warm_second() -> dg.MaterializeResult:
    """Nothing, downstream of warm_first."""
    return _result("warm_second")


dg.materialize([warm_first, warm_second],
               partition_key=dg.MultiPartitionKey({"platform": "warm", "date": "2026-11-21"}),
               instance=dg.DagsterInstance.ephemeral(), run_config=pipeline.cli.common.runs.QUIET_LOGS)
