"""Less than before is a finding: a rerun of a partition with fewer rows is refused past PMW_SHRINK_TOLERANCE, the
previous partition kept, unless the run is tagged pmw/allow_shrink=true; then it lands with a warning naming the
rows before and after. Each landing records its data file's checksum.

(No ``from __future__ import annotations``: Dagster reads the test assets' annotations at definition time.)
"""

import hashlib
from pathlib import Path

import dagster as dg

from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.common.tags import ALLOW_SHRINK_TAG
from pipeline.engine.lake.store import Lake
from pipeline.engine.reconciliation import shrink_percent
from tests.support.frames import table_frame
from tests.support.location import INGESTION_ASSETS
from tests.support.runs import DAY, shared_instance

PLATFORM = "kalshi"
PARTITION = dg.MultiPartitionKey({"platform": PLATFORM, "date": DAY.isoformat()})
MARKETS = [a for a in INGESTION_ASSETS if a.key.to_user_string() == "markets"]


def _run(tags: dict[str, str] | None = None) -> dg.ExecuteInProcessResult:
    return dg.materialize(MARKETS, partition_key=PARTITION, resources={"pipeline": PipelineResource()},
                          instance=shared_instance(), raise_on_error=False, tags=tags)


def test_a_rerun_with_half_the_rows_is_refused_in_one_line_unless_the_run_allows_it_then_a_warning_names_it(
    pipeline_env: Path,
) -> None:
    lake = Lake(pipeline_env / "lake")
    assert _run().success  # the test world's markets of the partition, landed: what a rerun serves
    served = lake.row_count("markets", PLATFORM, DAY)
    held = 2 * served
    lake.write_partition("markets", PLATFORM, DAY, table_frame("markets", PLATFORM, DAY, held, {}))
    before = lake.partition_path("markets", PLATFORM, DAY).read_bytes()  # type: ignore[union-attr]

    refused = _run()
    assert not refused.success
    [failure] = refused.get_step_failure_events()
    assert failure.step_failure_data.error is not None
    said = failure.step_failure_data.error.to_string()
    assert (f"PartitionRefused: markets {PLATFORM} {DAY}: a rerun would replace {held} rows with {served} "
            f"({shrink_percent(held, served)}), past PMW_SHRINK_TOLERANCE=0.05; the previous partition is kept "
            "(`pmw backfill --allow-shrink`, or the run tag pmw/allow_shrink=true, lands it)\n") in said, said
    assert lake.partition_path("markets", PLATFORM, DAY).read_bytes() == before  # type: ignore[union-attr]

    allowed = _run(tags={ALLOW_SHRINK_TAG: "true"})
    assert allowed.success
    assert lake.row_count("markets", PLATFORM, DAY) == served
    [warning] = [c for c in allowed.get_asset_check_evaluations() if c.check_name == "rows_kept"]
    assert not warning.passed and warning.severity == dg.AssetCheckSeverity.WARN
    [example] = warning.metadata["examples"].value  # type: ignore[attr-defined]
    assert (example["rows_before"], example["rows_after"], example["change"]) == (held, served, "-50.0 %")
    [landed] = allowed.asset_materializations_for_node("markets")
    path = lake.partition_path("markets", PLATFORM, DAY)
    assert landed.metadata["checksum"].value == hashlib.sha256(path.read_bytes()).hexdigest()  # type: ignore[union-attr]
