"""`pmw demo`'s watch-list tables: one orderbook round of every platform with books at the world's last hour,
and the watched traders of every day the demo landed.

The demo reads the example watch lists shipped in the package (`examples/`, beside this module) unless
PMW_ORDERBOOK_WATCHLIST and PMW_TRADER_WATCHLIST name others, and the in-process sandbox serves its live answers
(books, profiles) as of the moment asked for (its world's clock is set to it): the round's time, and the midnight
after each trader day.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from importlib import resources

import dagster as dg

from pipeline.cli.common.instance import pmw_instance
from pipeline.cli.common.runs import materialise
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.orderbooks.assets import SNAPSHOT_AT_TAG, orderbook_round_asset
from pipeline.defs.orderbooks.schedule import platforms_with_books
from pipeline.defs.profiles.assets import trader_profiles_asset
from pipeline.engine.config import variable_set
from pipeline.engine.schema import Source
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.plug import InProcessSandbox

EXAMPLES = resources.files(__package__) / "examples"  # package data: in a checkout and in an installed wheel alike
EXAMPLE_WATCHLISTS = {"PMW_ORDERBOOK_WATCHLIST": EXAMPLES / "orderbook_watchlist.csv",
                      "PMW_TRADER_WATCHLIST": EXAMPLES / "trader_watchlist.csv"}


def example_watchlists() -> dict[str, str]:
    """The example watch lists for the variables the environment leaves unset."""
    return {name: str(path) for name, path in EXAMPLE_WATCHLISTS.items() if not variable_set(name)}


def land_watchlists(world: WorldConfig, first: date, resource: PipelineResource,
                    say: Callable[[str], None] = print, instance: dg.DagsterInstance | None = None) -> bool:
    """The snapshot round and the traders' days from `first` to the world's last (runs in `instance`, default
    pmw's); True when all landed."""
    settings = resource.settings()
    if settings.source == Source.DIRECT:
        say("orderbooks and traders: not taken (they read the unified API; this demo reads the platforms' own APIs)")
        return True
    app = InProcessSandbox.of(settings).app
    instance = instance or pmw_instance(settings.data_dir)
    orderbook_round, trader_profiles = orderbook_round_asset(settings), trader_profiles_asset(settings)
    round_at = datetime.combine(world.end_day, time(23), UTC)
    app.live_at = round_at
    platforms = platforms_with_books(settings)
    say(f"orderbook snapshots: one round at {round_at.isoformat()} of {', '.join(p.value for p in platforms)}")
    landed = all([_run(orderbook_round, p.value, world.end_day, resource, instance, say,
                       {SNAPSHOT_AT_TAG: round_at.isoformat()}) for p in platforms])
    traded_on = sorted({item.platform.value for item in settings.trader_watchlist})
    say(f"trader profiles: {len(settings.trader_watchlist)} watched traders of {', '.join(traded_on)}")
    for day in (first + timedelta(days=n) for n in range((world.end_day - first).days + 1)):
        app.live_at = datetime.combine(day + timedelta(days=1), time(0, 45), UTC)  # as the daily schedule would
        landed = all([_run(trader_profiles, p, day, resource, instance, say) for p in traded_on]) and landed
    app.live_at = None
    return landed


def _run(asset: dg.AssetsDefinition, platform: str, day: date, resource: PipelineResource,
         instance: dg.DagsterInstance, say: Callable[[str], None], tags: dict[str, str] | None = None) -> bool:
    """One partition of a watch-list asset as a Dagster run; a line saying how it went."""
    result = materialise(asset.keys, resource, instance, tags=tags,
                         partition_key=dg.MultiPartitionKey({"platform": platform, "date": day.isoformat()}))
    failed = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
    say(f"  {asset.node_def.name:<16} {platform:<11} {day} "
        + ("landed" if result.success else "FAILED") + (f" (checks failed: {', '.join(failed)})" if failed else ""))
    return result.success
