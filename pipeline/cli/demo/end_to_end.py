"""What `pmw demo` runs: the whole pipeline offline, on the in-process sandbox, then a look at what landed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from pipeline.cli.backfill.partitions import run_backfill
from pipeline.cli.common.dagster_home import pmw_dagster_home
from pipeline.cli.common.instance import pmw_instance
from pipeline.cli.demo.links import land_links, say_widest_gaps
from pipeline.cli.demo.sports import land_sports_day, say_widest_spreads
from pipeline.cli.demo.watchlists import example_watchlists, land_watchlists
from pipeline.cli.demo.world import ui_command, world_env
from pipeline.cli.sql.models import run_sql
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.config import DIRECT_SANDBOX, Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import MARKET_PLATFORMS, Source, lake_tables
from pipeline.engine.warehouse.views import connect_read_only, ensure_raw_views
from pmw_sandbox.catalogue import WorldConfig

EXAMPLE_QUESTION = "Top 5 markets by traded notional (price x size) on the last day"
EXAMPLE_SQL = """
SELECT m.platform, m.title, count(*) AS trades, round(sum(t.price * t.size), 2) AS notional
FROM raw.trades t JOIN raw.markets m USING (platform, date)
WHERE t.market_id = m.id AND t.date = (SELECT max(date) FROM raw.trades)
GROUP BY ALL ORDER BY notional DESC LIMIT 5
"""
MART_QUESTION = "Each platform's days, from the mart marts.platform_daily (volume = sum of price x size)"
MART_SQL = """
SELECT platform, day, active_markets, new_markets, resolved_markets, trades, volume
FROM marts.platform_daily ORDER BY platform, day
"""


def demo_settings(world: WorldConfig, base: Settings) -> Settings:
    """The environment's settings (`base`, as parsed) with the sandbox's world as the source: its unified API, or,
    with PMW_SOURCE=direct, its Polymarket- and Kalshi-shaped APIs. The environment is read, never written."""
    direct = base.source == Source.DIRECT
    demo = {"PMW_SOURCE": Source.DIRECT if direct else Source.SANDBOX, **world_env(world), **example_watchlists()}
    if direct:
        demo["PMW_DIRECT_URL"] = DIRECT_SANDBOX
    return Settings.from_env(overrides=demo)


def run_demo(world: WorldConfig, days: int, say: Callable[[str], None] = print, base: Settings | None = None) -> int:
    """The pipeline end to end, offline, with the settings of `demo_settings` (over `base`, the environment's),
    parsed once for the backfill, the snapshots, sports and the SQL models alike, each built from them; the runs
    recorded in pmw's instance (DAGSTER_HOME's, else the data dir's own: pipeline.cli.common.instance)."""
    settings = demo_settings(world, base or Settings.from_env(credentials=False))
    resource = PipelineResource(base_settings=settings)
    instance = pmw_instance(settings.data_dir)
    last = world.end_day
    first = last - timedelta(days=days - 1)
    apis = "the platforms' own APIs" if settings.source == Source.DIRECT else "the unified API"
    say(f"pmw demo: sandbox world (seed {world.seed}), {apis} -> {settings.data_dir}/, days {first} .. {last}")
    reports = run_backfill([p.value for p in MARKET_PLATFORMS], first, last, resource=resource, say=say,
                           instance=instance)
    say("")
    snapshots_landed = land_watchlists(world, first, resource, say=say, instance=instance)
    sports = settings.source != Source.DIRECT
    say(f"\nSports, {last}: every league's teams, futures, awards and their odds on five platforms"
        if sports else "\nSports: left out (PMW_SOURCE=direct; only the unified API serves them)")
    sports_failed = sports and any(r.error for r in land_sports_day(last, resource, say, instance))
    lake = Lake.of(settings)
    ensure_raw_views(settings.warehouse_path, lake)
    land_links(settings, lake, say)
    say("")
    models_built = run_sql(resource=resource, say=say, instance=instance)
    with connect_read_only(settings.warehouse_path, lake) as db:
        say("\nWhat landed (warehouse " + str(settings.warehouse_path) + "):")
        say(f"  {'table':<19} {'platform':<11} {'partitions':>10} {'rows':>9}")
        for table in (name for name, spec in lake_tables().items() if spec.partitioned_by == "platform"):
            counts = db.sql(f"SELECT platform, count(DISTINCT date), count(*) FROM raw.{table} "
                            "GROUP BY platform ORDER BY platform").fetchall()
            for platform, partitions, rows in counts:
                say(f"  {table:<19} {platform:<11} {partitions:>10} {rows:>9}")
        total_trades = db.sql("SELECT count(*) FROM raw.trades").fetchall()[0][0]
        landed = sum(r.rows.get("trades", 0) for r in reports)
        say(f"\n  SELECT count(*) FROM raw.trades -> {total_trades} (the backfill landed {landed} trades)")
        say(f"\n{EXAMPLE_QUESTION}:{EXAMPLE_SQL}")
        for platform, title, trades, notional in db.sql(EXAMPLE_SQL).fetchall():
            say(f"  {platform:<11} {trades:>6} trades {notional:>12,.2f}  {title[:60]}")
        say(f"\n{MART_QUESTION}:{MART_SQL}")
        say(f"  {'platform':<11} {'day':<10} {'active':>6} {'new':>4} {'resolved':>8} {'trades':>7} {'volume':>12}")
        for platform, day, active, new, resolved, trades, volume in db.sql(MART_SQL).fetchall():
            say(f"  {platform:<11} {day!s:<10} {active:>6} {new:>4} {resolved:>8} {trades:>7} {volume:>12,.2f}")
        if sports:
            say_widest_spreads(db, last, say)
        say_widest_gaps(db, last, say)
    say(f"\nQuery it yourself (read-only, {settings.warehouse_path}): pmw query \"SELECT count(*) FROM raw.trades\", "
        "or pmw shell for a prompt")
    say(f"See the runs in Dagster's UI (http://127.0.0.1:3000): "
        f"{ui_command(world, pmw_dagster_home(settings.data_dir))}")
    failed = [r for r in reports if not r.success]
    return 1 if failed or sports_failed or not models_built or not snapshots_landed else 0

