"""`pmw backfill`: materialise (platform, day) partitions through Dagster, reporting each as it lands."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import dagster as dg

from pipeline.assets.ingest import INGESTION_ASSETS
from pipeline.resources import PipelineResource
from pipeline.schema import TABLES

QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass
class PartitionReport:
    platform: str
    day: date
    success: bool
    rows: dict[str, int] = field(default_factory=dict)
    rejects: dict[str, int] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)
    failed_checks: list[str] = field(default_factory=list)
    error: str | None = None

    def line(self) -> str:
        if not self.success:
            return f"{self.platform} {self.day}: FAILED: {self.error}"
        tables = ", ".join(f"{t} {self.rows.get(t, 0)}" for t in TABLES if t in self.rows)
        rejects = sum(self.rejects.values())
        checks = f"; failed checks: {', '.join(self.failed_checks)}" if self.failed_checks else ""
        return (f"{self.platform} {self.day}: {tables} rows; {rejects} rejects; "
                f"{sum(self.requests.values())} requests{checks}")


def days_between(start: date, end: date) -> Iterator[date]:
    if end < start:
        raise ValueError(f"--end {end} is before --start {start}")
    day = start
    while day <= end:
        yield day
        day += timedelta(days=1)


def select_assets(names: Sequence[str] | None) -> list[dg.AssetsDefinition]:
    if not names:
        return list(INGESTION_ASSETS)
    known = {a.key.to_user_string(): a for a in INGESTION_ASSETS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown asset(s) {', '.join(unknown)}; expected some of {', '.join(known)}")
    return [known[n] for n in names]


def _instance() -> dg.DagsterInstance:
    """The instance of DAGSTER_HOME when set (runs then show in the UI), else a throwaway one."""
    return dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else dg.DagsterInstance.ephemeral()


def materialise_partition(assets: Sequence[dg.AssetsDefinition], platform: str, day: date,
                          instance: dg.DagsterInstance, resource: PipelineResource) -> PartitionReport:
    key = dg.MultiPartitionKey({"platform": platform, "date": day.isoformat()})
    result = dg.materialize(assets, partition_key=key, instance=instance, resources={"pipeline": resource},
                            run_config=QUIET_LOGS, raise_on_error=False)
    report = PartitionReport(platform, day, result.success)
    for asset in assets:
        table = asset.key.to_user_string()
        materializations = result.asset_materializations_for_node(table)
        if not materializations:
            continue
        metadata = {k: v.value for k, v in materializations[-1].metadata.items()}
        report.rows[table] = int(metadata.get("dagster/row_count", 0))
        report.rejects[table] = int(metadata.get("rejects", 0))
        report.requests.update(metadata.get("requests_by_endpoint", {}))
    for event in result.get_asset_check_evaluations():
        if not event.passed:
            report.failed_checks.append(f"{event.asset_key.to_user_string()}.{event.check_name}")
    if not result.success:
        failures = [e for e in result.all_events if e.is_step_failure]
        report.error = "; ".join(f"{e.step_key}: {_root_cause(e.step_failure_data.error)}" for e in failures)
        report.error = report.error or "run failed"
    return report


def _root_cause(error: Any) -> str:
    """The innermost error's message: the user's error, not Dagster's wrapper around it."""
    if error is None:
        return "failed"
    while error.cause is not None:
        error = error.cause
    return error.message.strip().splitlines()[-1] if error.message.strip() else error.cls_name


def run_backfill(platforms: Sequence[str], start: date, end: date, asset_names: Sequence[str] | None = None,
                 resource: PipelineResource | None = None, say: Callable[[str], None] = print) -> list[PartitionReport]:
    assets = select_assets(asset_names)
    resource = resource or PipelineResource()
    instance = _instance()
    days = list(days_between(start, end))
    total = len(days) * len(platforms)
    reports = []
    for day in days:
        for platform in platforms:
            report = materialise_partition(assets, platform, day, instance, resource)
            reports.append(report)
            say(f"[{len(reports)}/{total}] {report.line()}")
    requests = sum((r.requests for r in reports), Counter())
    say(f"requests by endpoint: {', '.join(f'{k} {v}' for k, v in sorted(requests.items())) or 'none'}")
    return reports
