"""`pmw demo`'s snapshot round: one orderbook round of every platform with books, at the world's last hour.

The demo reads the example watch list shipped in `examples/` unless PMW_ORDERBOOK_WATCHLIST names another, and
the in-process sandbox serves the books of the moment of the round (its world's clock is set to it), so that the
round is a moment of the days the demo landed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, time
from pathlib import Path

import dagster as dg

from pipeline.cli.instance import pmw_instance
from pipeline.cli.sql import SILENT_LOGS
from pipeline.defs.orderbooks.assets import SNAPSHOT_AT_TAG, orderbook_round
from pipeline.defs.orderbooks.schedule import platforms_with_books
from pipeline.defs.resources import PipelineResource
from pipeline.engine.schema import Source
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.plug import InProcessSandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_WATCHLISTS = {"PMW_ORDERBOOK_WATCHLIST": EXAMPLES / "orderbook_watchlist.csv"}


def example_watchlists(env: Mapping[str, str]) -> dict[str, str]:
    """The example watch lists for the variables the environment leaves unset (when the files are there)."""
    return {name: str(path) for name, path in EXAMPLE_WATCHLISTS.items() if not env.get(name) and path.is_file()}


def take_demo_round(world: WorldConfig, resource: PipelineResource, say: Callable[[str], None] = print) -> bool:
    """One round of every platform with books at the world's last hour; True when every round landed."""
    settings = resource.settings()
    if settings.source == Source.DIRECT:
        say("orderbook snapshots: not taken (they read the unified API; this demo reads the platforms' own APIs)")
        return True
    round_at = datetime.combine(world.end_day, time(23), UTC)
    InProcessSandbox.of(settings).app.live_at = round_at
    platforms = platforms_with_books(settings)
    say(f"orderbook snapshots: one round at {round_at.isoformat()} of {', '.join(p.value for p in platforms)}")
    landed = True
    for platform in platforms:
        result = dg.materialize(
            [orderbook_round],
            partition_key=dg.MultiPartitionKey({"platform": platform.value, "date": world.end_day.isoformat()}),
            resources={"pipeline": resource},
            instance=pmw_instance(),
            tags={SNAPSHOT_AT_TAG: round_at.isoformat()},
            run_config=SILENT_LOGS,
            raise_on_error=False,
        )
        failed = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
        say(f"  {platform.value:<11} {'landed' if result.success else 'FAILED'}"
            + (f" (checks failed: {', '.join(failed)})" if failed else ""))
        landed = landed and result.success
    return landed
