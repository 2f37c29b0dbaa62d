"""What the Dagster code location defines, by name: the snapshot that a reorganisation must leave unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg

SNAPSHOT = Path(__file__).with_name("definitions_snapshot.json")


def describe(defs: dg.Definitions) -> dict[str, Any]:
    """The asset keys, check keys, jobs, schedules and sensors of a code location, in a stable order."""
    repository = defs.get_repository_def()
    graph = repository.asset_graph
    return {
        "assets": sorted(key.to_user_string() for key in graph.get_all_asset_keys()),
        "asset_checks": sorted(f"{key.asset_key.to_user_string()}:{key.name}" for key in graph.asset_check_keys),
        "jobs": sorted(name for name in repository.job_names if not name.startswith("__")),
        "schedules": sorted(
            f"{schedule.name} {schedule.cron_schedule} -> {schedule.job_name}" for schedule in repository.schedule_defs
        ),
        "sensors": sorted(sensor.name for sensor in repository.sensor_defs),
    }


if __name__ == "__main__":  # python -m tests.support.definitions_snapshot: records the snapshot
    from pipeline.definitions import defs

    SNAPSHOT.write_text(json.dumps(describe(defs), indent=2) + "\n")
    print(f"wrote {SNAPSHOT}")
