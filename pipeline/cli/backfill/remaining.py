"""What an interrupted `pmw backfill` leaves: the partitions not finished, said a line each, the command that lands
them, and what that command (`--missing`) runs: only the tables the lake lacks."""

from __future__ import annotations

import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Protocol

import dagster as dg

from pipeline.cli.backfill.interrupts import exit_status
from pipeline.cli.common.failures import CommandError
from pipeline.engine.lake.store import Lake


@dataclass(frozen=True)
class Planned:
    """A partition the backfill is to run, and the ingestion assets it runs of it."""

    platform: str
    day: date
    keys: Sequence[dg.AssetKey]


class Landed(Protocol):
    """A partition's run as far as it went: which tables it landed."""

    platform: str
    day: date
    rows: dict[str, int]


def not_landed(lake: Lake, planned: Sequence[Planned]) -> list[Planned]:
    """Each planned partition with only its tables that have not landed in `lake` (as `pmw status` reads them);
    those with none left out."""
    landed = {key: set(lake.partitions(key.to_user_string())) for key in {k for p in planned for k in p.keys}}
    left = [replace(p, keys=[k for k in p.keys if (p.platform, p.day) not in landed[k]]) for p in planned]
    return [p for p in left if p.keys]


def not_finished_lines(left: Sequence[Planned], interrupted: Landed | None) -> Iterator[str]:
    """A NOT FINISHED line per partition `left`, the first of them `interrupted` (its tables not landed named)
    unless the interrupt came between two partitions."""
    for plan in left:
        if interrupted is not None and (plan.platform, plan.day) == (interrupted.platform, interrupted.day):
            tables = [k.to_user_string() for k in plan.keys if k.to_user_string() not in interrupted.rows]
            yield f"NOT FINISHED {plan.platform} {plan.day}: interrupted; {', '.join(tables)} not landed"
        else:
            yield f"NOT FINISHED {plan.platform} {plan.day}: not started"


def missing_command(platforms: Sequence[str], start: date, end: date, asset_names: Sequence[str] | None) -> str:
    """The `pmw backfill` that lands what an interrupted one did not: the same partitions, with --missing."""
    assets = f" --assets {','.join(asset_names)}" if asset_names else ""
    return f"pmw backfill --platform {','.join(platforms)} --start {start} --end {end}{assets} --missing"


class BackfillInterrupted(CommandError):
    """The backfill stopped at a SIGINT or SIGTERM: its exit status is the signal's (130, 143)."""

    def __init__(self, received: signal.Signals, unfinished: int, command: str) -> None:
        super().__init__(f"stopped by {received.name}: {unfinished} partition(s) not finished; {command} lands them",
                         exit_status(received))
