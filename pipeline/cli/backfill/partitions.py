"""What `pmw backfill` does: (platform, day) partitions materialised through Dagster, each reported as it lands."""

from __future__ import annotations

import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TextIO

import dagster as dg

from pipeline.cli.backfill.interrupts import Interrupts
from pipeline.cli.backfill.progress import PLAIN_EVERY_S, logs_above, progress_for, watching
from pipeline.cli.backfill.remaining import (
    BackfillInterrupted,
    Planned,
    missing_command,
    not_finished_lines,
    not_landed,
)
from pipeline.cli.common.failures import root_cause
from pipeline.cli.common.instance import pmw_instance
from pipeline.cli.common.runs import materialise
from pipeline.defs.automation.holds import platform_holds
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.ingestion.platform_status import TABLE as PLATFORM_STATUS
from pipeline.defs.ingestion.windows import WINDOW_TAG
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES, Source
from pipeline.engine.sources.activity import PROCESS_ACTIVITY
from pipeline.engine.spool.window import Window, WindowSweeps, windows_of


@dataclass(frozen=True)
class FailedCheck:
    """A check that did not pass on a partition: which, how severe, and how many rows broke it."""

    asset: str
    check: str
    severity: str  # "ERROR" fails the backfill; "WARN" does not
    violations: int | None  # from the check's metadata; None when it reported none

    @property
    def name(self) -> str:
        return f"{self.asset}.{self.check}"

    @property
    def is_error(self) -> bool:
        return self.severity == dg.AssetCheckSeverity.ERROR.value

    def line(self, platform: str, day: date) -> str:
        count = "failed" if self.violations is None else f"{self.violations} violation(s)"
        warning = "" if self.is_error else f" (severity {self.severity}: does not fail the backfill)"
        return f"FAILED CHECK {self.name} {platform} {day}: {count}{warning}"


@dataclass
class PartitionReport:
    platform: str
    day: date
    success: bool  # every asset landed; a failed check does not make this false, it is in failed_checks
    rows: dict[str, int] = field(default_factory=dict)
    rejects: dict[str, int] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)
    failed_checks: list[FailedCheck] = field(default_factory=list)
    incomplete: dict[str, int] = field(default_factory=dict)  # table -> markets not read back to the day's start
    error: str | None = None
    held: bool = False  # not run: the service holds its platform (`error` says why, in one line for the platform)
    status_requests: Counter[str] = field(default_factory=Counter)  # the run's observation of the service's status

    @property
    def ok(self) -> bool:
        """Landed, and no check of severity ERROR failed: what the exit code of `pmw backfill` says."""
        return self.success and not any(check.is_error for check in self.failed_checks)

    def line(self) -> str:
        if not self.success:
            return f"{self.platform} {self.day}: FAILED: {self.error}"
        tables = ", ".join(f"{t} {self.rows.get(t, 0)}" for t in TABLES if t in self.rows)
        rejects = sum(self.rejects.values())
        names = ", ".join(check.name for check in self.failed_checks)
        checks = f"; failed checks: {names}" if self.failed_checks else ""
        short = "".join(f"; {table} incomplete: {count} market(s) not read back to the day's start"
                        for table, count in self.incomplete.items())
        status = sum(self.status_requests.values())
        observed = f" (and {status} for /health and /platforms)" if status else ""
        return (f"{self.platform} {self.day}: {tables} rows; {rejects} rejects; "
                f"{sum(self.requests.values())} requests{observed}{checks}{short}")

    def failure_lines(self) -> list[str]:
        """What went wrong, one line each, for the end of the output: the partition, then its checks."""
        if self.held:
            return []  # the platform's one HELD PLATFORM line says it
        failed = [f"FAILED PARTITION {self.platform} {self.day}: {self.error}"] if not self.success else []
        return failed + [check.line(self.platform, self.day) for check in self.failed_checks]


def days_between(start: date, end: date, first: date) -> Iterator[date]:
    """The days from `start` to `end`, each a daily partition (from `first`): ValueError naming the day otherwise."""
    if end < start:
        raise ValueError(f"--end {end} is before --start {start}")
    last = datetime.now(UTC).date() - timedelta(days=1)  # a day is a partition once it is over
    if start < first:
        raise ValueError(f"--start {start} is before the first partition, {first} (PMW_START_DATE)")
    if end > last:
        raise ValueError(f"--end {end} has no partition yet: the last is yesterday, {last} (UTC)")
    day = start
    while day <= end:
        yield day
        day += timedelta(days=1)


def ingestion_keys(names: Sequence[str] | None) -> list[dg.AssetKey]:
    """The ingestion assets named (every table of the schema's TABLES when none is), each named by its table."""
    if not names:
        return [dg.AssetKey(table) for table in TABLES]
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        raise ValueError(f"unknown asset(s) {', '.join(unknown)}; expected some of {', '.join(TABLES)}")
    return [dg.AssetKey(name) for name in names]


def materialise_partition(keys: Sequence[dg.AssetKey], platform: str, day: date,
                          instance: dg.DagsterInstance, resource: PipelineResource,
                          verbose: bool = False, window: Window | None = None) -> PartitionReport:
    """One Dagster run of the partition; with a `window`, its trades and price history come from the window's
    sweep (pipeline.engine.spool.window). Its requests are those the process sent while the run ran (the HTTP
    layers count each in PROCESS_ACTIVITY), a failed step's included: a step's metadata holds its own, and a
    step that failed records none; those of the run's observation of the service (platform_status) are apart."""
    key = dg.MultiPartitionKey({"platform": platform, "date": day.isoformat()})
    tags = {WINDOW_TAG: window.tag} if window is not None else None
    before = PROCESS_ACTIVITY.snapshot()
    # Every run also observes what the service says about itself (platform_status), whatever `keys` are.
    result = materialise([*keys, dg.AssetKey(PLATFORM_STATUS)], resource, instance, partition_key=key, tags=tags,
                         verbose=verbose)
    report = PartitionReport(platform, day, success=True, requests=(PROCESS_ACTIVITY.snapshot() - before).by_endpoint)
    for asset_key in keys:
        table = asset_key.to_user_string()
        materializations = result.asset_materializations_for_node(table)
        if not materializations:
            continue
        metadata = {k: v.value for k, v in materializations[-1].metadata.items()}
        report.rows[table] = int(metadata.get("dagster/row_count", 0))
        report.rejects[table] = int(metadata.get("rejects", 0))
        if metadata.get("complete") is False:
            report.incomplete[table] = int(metadata.get("incomplete_markets", 0))
    for observed in result.asset_materializations_for_node(PLATFORM_STATUS):
        asked = observed.metadata.get("requests_by_endpoint")  # none under PMW_SOURCE=direct: nothing to ask
        report.status_requests.update(asked.value if asked is not None else {})  # type: ignore[arg-type]
    report.requests -= report.status_requests  # the data's requests, apart from the observation's
    report.failed_checks = [_failed_check(e) for e in result.get_asset_check_evaluations() if not e.passed]
    report.error = _run_error(result, [t for t in (k.to_user_string() for k in keys) if t not in report.rows])
    report.success = report.error is None
    return report


def _failed_check(evaluation: dg.AssetCheckEvaluation) -> FailedCheck:
    violations = evaluation.metadata.get("violations")
    return FailedCheck(evaluation.asset_key.to_user_string(), evaluation.check_name, evaluation.severity.value,
                       int(violations.value) if isinstance(violations, dg.IntMetadataValue) else None)


def _run_error(result: dg.ExecuteInProcessResult, not_landed: list[str]) -> str | None:
    """Why the partition did not land whole, or None if it did (failed checks are in the report, not here)."""
    failures = result.get_step_failure_events()
    if failures:
        return "; ".join(f"{e.step_key}: {root_cause(e.step_failure_data.error)}" for e in failures)
    return f"{', '.join(not_landed)} not materialised: the run failed" if not_landed else None


def budget_rate(settings: Settings) -> float | None:
    """Requests a second that the unified API's budget allows, or None when the source has no such budget
    (the sandbox; the platforms' own APIs, whose several budgets the measured time per partition covers)."""
    return settings.rate_limit_per_min / settings.rate_window_s if settings.source == Source.API else None


def run_backfill(platforms: Sequence[str], start: date, end: date, asset_names: Sequence[str] | None = None,
                 resource: PipelineResource | None = None, say: Callable[[str], None] = print,
                 verbose: bool = False, progress_stream: TextIO | None = None,
                 progress_every_s: float = PLAIN_EVERY_S,
                 instance: dg.DagsterInstance | None = None, missing: bool = False) -> list[PartitionReport]:
    """Materialise every (platform, day) partition with `resource` (default: one holding the settings of the
    environment, parsed here once), one Dagster run each, the consecutive days of a platform read as one window
    (pipeline.engine.spool.window: one sweep of the API per window, up to MAX_WINDOW_DAYS days), saying a line per
    partition as it lands (and, when
    `verbose`, letting Dagster print its warnings and errors with their stack traces). Meanwhile progress goes
    to `progress_stream` (default stderr; pipeline.cli.backfill.progress): a status line on a terminal, else plain
    lines every `progress_every_s` seconds. A platform the service holds (`/platforms` reports it unavailable:
    pipeline.defs.automation.holds) is not run: one HELD PLATFORM line names it with the service's status, and its
    partitions are reported as not landed. The runs go to `instance` (default: pmw's, `pmw_instance`). With
    `missing`, only the tables the lake lacks are run, and a partition that lacks none is skipped.

    A first SIGINT or SIGTERM (pipeline.cli.backfill.interrupts) abandons the running partition's table, starts
    nothing new, says a NOT FINISHED line per partition left, and raises BackfillInterrupted, which names the
    command that lands them."""
    keys = ingestion_keys(asset_names)
    resource = resource or PipelineResource(base_settings=Settings.from_env())
    days = list(days_between(start, end, resource.settings().first_day))
    instance = instance or pmw_instance(resource.settings().data_dir)
    with Interrupts() as interrupts:
        holds = platform_holds(platforms, resource.settings())
        reports = [PartitionReport(platform, day, success=False, error=holds.held[platform], held=True)
                   for platform in platforms if platform in holds.held for day in days]
        for platform in (p for p in platforms if p in holds.held):
            say(f"HELD PLATFORM {holds.line(platform)}; none of its {len(days)} partition(s) was run")
        if holds.unasked:
            say(holds.summary())
        planned = [Planned(platform, day, keys) for day in days for platform in platforms
                   if platform not in holds.held]
        if missing:
            wanted = len(planned)
            planned = not_landed(Lake.of(resource.settings()), planned)
            say(f"--missing: {wanted - len(planned)} partition(s) already landed, skipped; {len(planned)} to run")
        progress, every_s = progress_for(progress_stream or sys.stderr, len(planned),
                                         budget_rate(resource.settings()), progress_every_s)
        token = uuid.uuid4().hex[:12]  # the days to run, not those --missing skips, are swept
        windows = {day: window for window in windows_of((p.day for p in planned), token) for day in window.days}
        finished: list[PartitionReport] = []
        interrupted: PartitionReport | None = None
        sweeps = WindowSweeps(resource.settings().windows_dir, resource.settings().lock_timeout_s)
        for spool in sweeps.remove_dead():
            say(f"removed the window spool {spool} of a backfill that is gone")
        with sweeps.owning(token), logs_above(progress.display):
            for plan in planned:
                if interrupts.requested:
                    break
                with watching(progress, plan.platform, plan.day, every_s):
                    report = materialise_partition(plan.keys, plan.platform, plan.day, instance, resource, verbose,
                                                   windows[plan.day])
                if interrupts.requested and not report.success:
                    interrupted = report  # its running table was abandoned: a partition not finished, not failed
                    break
                finished.append(report)
                say(f"[{len(finished)}/{len(planned)}] {report.line()}")
        reports += finished
        requests = sum((r.requests + r.status_requests for r in [*reports, *filter(None, [interrupted])]),
                       holds.requests)
        say(f"requests by endpoint: {', '.join(f'{k} {v}' for k, v in sorted(requests.items())) or 'none'}")
        for line in (line for report in reports for line in report.failure_lines()):
            say(line)
        if interrupts.requested:
            for line in not_finished_lines(planned[len(finished):], interrupted):
                say(line)
            raise BackfillInterrupted(interrupts.requested, len(planned) - len(finished),
                                      missing_command(platforms, start, end, asset_names))
    return reports
