"""The sports tables in `pmw demo`: one day of every league landed through Dagster, and the futures on
which the platforms disagreed most (what `pmw demo` shows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

import dagster as dg
import duckdb

from pipeline.cli.common.failures import root_cause
from pipeline.cli.common.instance import pmw_instance
from pipeline.cli.common.runs import materialise
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.schema import SPORTS_TABLES, League

WIDEST_SPREAD_SQL = """
SELECT league, future_name, arg_max(outcome_name, spread) AS outcome, max(spread) AS spread,
       arg_max(lowest_probability, spread) AS lowest, arg_max(highest_probability, spread) AS highest,
       arg_max(platforms, spread) AS platforms
FROM marts.future_odds_daily
WHERE day = ?
GROUP BY league, kind, future_id, future_name
ORDER BY spread DESC, future_id
LIMIT 3
"""


@dataclass
class LeagueDay:
    """What one league's day landed: rows per table, requests, failed checks, and the error if it did not land."""

    league: str
    day: date
    rows: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    failed_checks: list[str] = field(default_factory=list)
    error: str | None = None

    def line(self) -> str:
        landed = ", ".join(f"{table} {self.rows.get(table, 0)}" for table in SPORTS_TABLES)
        checks = f"; failed checks: {', '.join(self.failed_checks)}" if self.failed_checks else ""
        if self.error:
            return f"sports {self.league} {self.day}: FAILED: {self.error}"
        return f"sports {self.league} {self.day}: {landed} ({self.requests} requests){checks}"


def land_sports_day(day: date, resource: PipelineResource, say: Callable[[str], None] = print,
                    instance: dg.DagsterInstance | None = None) -> list[LeagueDay]:
    """Every league's (league, day) partition, one Dagster run each (in `instance`, default pmw's), a line said per
    league."""
    instance = instance or pmw_instance(resource.settings().data_dir)
    reports = []
    for league in League:
        key = dg.MultiPartitionKey({"league": league.value, "date": day.isoformat()})
        result = materialise(map(dg.AssetKey, SPORTS_TABLES), resource, instance, partition_key=key)
        report = LeagueDay(league.value, day)
        for event in result.get_asset_materialization_events():
            metadata = event.materialization.metadata
            report.rows[event.asset_key.to_user_string()] = int(metadata["dagster/row_count"].value)  # type: ignore[arg-type]
        report.requests = _requests(result)
        report.failed_checks = [f"{e.asset_key.to_user_string()}.{e.check_name}"
                                for e in result.get_asset_check_evaluations() if not e.passed]
        failures = result.get_step_failure_events()
        if failures:
            report.error = "; ".join(f"{e.step_key}: {root_cause(e.step_failure_data.error)}" for e in failures)
        say(f"  {report.line()}")
        reports.append(report)
    return reports


def _requests(result: dg.ExecuteInProcessResult) -> int:
    """The run's requests: each step's session counts its own, and a step may land two tables."""
    per_step: dict[str, int] = {}
    for event in result.get_asset_materialization_events():
        per_step[event.step_key or ""] = int(event.materialization.metadata["requests"].value)  # type: ignore[arg-type]
    return sum(per_step.values())


def say_widest_spreads(db: duckdb.DuckDBPyConnection, day: date, say: Callable[[str], None] = print) -> None:
    """The three futures (or awards) whose platforms disagreed most on the day, margins removed."""
    say(f"\nThe three futures with the widest spread between platforms on {day} (marts.future_odds_daily; "
        "probabilities with each platform's margin removed):")
    for league, name, outcome, spread, lowest, highest, platforms in db.execute(WIDEST_SPREAD_SQL, [day]).fetchall():
        say(f"  {league:<4} {name[:44]:<44} {outcome[:22]:<22} {lowest:6.1%} .. {highest:6.1%} "
            f"(spread {spread * 100:4.1f} points, {platforms} platforms)")
