"""Imported once by the fork server of tests.support.warm: the pipeline's command line and Dagster, warmed.

Importing `dagster` leaves most of its execution machinery to be imported by the first run; materialising a
trivial asset once here imports it, so that forked backfills start with it loaded.
"""

from __future__ import annotations

import dagster as dg

# Imported for their import cost, paid here once.
import pipeline.cli.backfill
import pipeline.cli.main


@dg.asset
def _warm_up() -> None:
    """Nothing: materialised once to import what a Dagster run imports."""


dg.materialize([_warm_up], instance=dg.DagsterInstance.ephemeral(), run_config=pipeline.cli.backfill.QUIET_LOGS)
