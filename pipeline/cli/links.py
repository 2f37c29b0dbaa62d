"""`pmw links`: the pairs of markets the matcher is unsure of, each with the line that confirms or rejects it in
the analyst's file (PMW_MARKET_LINKS); `--confirm`/`--reject` append those lines, `--land` lands market_links
first (the matcher over the lake's latest markets, the file applied, as the asset links/market_links does)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime

import polars as pl

from pipeline.cli.common.arguments import Subparsers
from pipeline.cli.common.failures import CommandError
from pipeline.cli.common.settings import configured
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.links.overrides import HEADER, OverridesError, Verdict, override_line
from pipeline.engine.schema.links import LinkDecision
from pipeline.engine.warehouse.market_links import land_market_links, landed_market_links


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "links", help="list the market pairs the matcher is unsure of, to confirm or reject (PMW_MARKET_LINKS)",
        epilog="exit status: 0 done; 2 bad configuration, no market_links landed yet, or a pair that is not a "
               "candidate.")
    parser.add_argument("--land", action="store_true",
                        help="land market_links first, from the lake's latest markets and the PMW_MARKET_LINKS file")
    parser.add_argument("--confirm", action="append", default=[], metavar="POLYMARKET_ID,KALSHI_ID",
                        help="append a `confirmed` line for this candidate to the PMW_MARKET_LINKS file (repeatable)")
    parser.add_argument("--reject", action="append", default=[], metavar="POLYMARKET_ID,KALSHI_ID",
                        help="append a `rejected` line for this candidate to the PMW_MARKET_LINKS file (repeatable)")
    parser.add_argument("--limit", type=int, default=50, help="candidates listed, most confident first (default 50)")


def run(args: argparse.Namespace) -> int:
    settings = configured(credentials=False, writes=args.land)
    lake = Lake.of(settings)
    try:
        links = land_market_links(lake, settings.market_links_file, datetime.now(UTC)) if args.land \
            else landed_market_links(lake)
    except OverridesError as error:
        raise CommandError(str(error)) from None
    if links is None:
        raise CommandError(f"no market_links landed in {lake.url} yet: run `pmw links --land` (or materialise the "
                           "asset links/market_links)")
    verdicts = [(pair, Verdict.CONFIRMED) for pair in args.confirm] + [(pair, Verdict.REJECTED) for pair in args.reject]
    if verdicts:
        append_verdicts(settings, links, verdicts)
    else:
        list_unsure(links, args.limit)
    return 0


def list_unsure(links: pl.DataFrame, limit: int, say: Callable[[str], None] = print) -> None:
    """The unsure candidates, most confident first, each with its evidence and the two lines the analyst may keep."""
    unsure = links.filter(pl.col("decision") == LinkDecision.UNSURE.value).sort("confidence", descending=True)
    linked = links.filter(pl.col("decision") == LinkDecision.LINKED.value).height
    say(f"pmw links: {linked} pair(s) linked, {unsure.height} unsure; paste a line into the PMW_MARKET_LINKS file "
        "(or run pmw links --confirm/--reject POLYMARKET_ID,KALSHI_ID)")
    for row in unsure.head(limit).iter_rows(named=True):
        say(f"\n{row['confidence']:.2f}  polymarket {row['polymarket_id']}: {row['polymarket_title']}")
        say(f"      kalshi {row['kalshi_id']}: {row['kalshi_title']}")
        say(f"      similarity {row['title_similarity']:.2f}, numbers {row['polymarket_numbers']} / "
            f"{row['kalshi_numbers']}, directions {row['polymarket_direction']} / {row['kalshi_direction']}, "
            f"resolution {_days(row['resolution_gap_days'])} apart, outcomes {row['outcome_map']}")
        for verdict in Verdict:
            say("      " + override_line(row["polymarket_id"], row["kalshi_id"], verdict, row["outcome_map"]))
    if unsure.height > limit:
        say(f"\n... and {unsure.height - limit} more (--limit)")


def append_verdicts(settings: Settings, links: pl.DataFrame, verdicts: list[tuple[str, Verdict]],
                    say: Callable[[str], None] = print) -> None:
    """Append a line per verdict to the PMW_MARKET_LINKS file (its header first when it is new)."""
    path = settings.market_links_file
    if path is None:
        raise CommandError("set PMW_MARKET_LINKS to the file of confirmed and rejected pairs to append to")
    candidates = {(p, k): m for p, k, m in links.select("polymarket_id", "kalshi_id", "outcome_map").iter_rows()}
    lines = []
    for pair, verdict in verdicts:
        polymarket_id, _, kalshi_id = pair.partition(",")
        if (polymarket_id, kalshi_id) not in candidates:
            raise CommandError(f"{pair!r} is not a pair of market_links (POLYMARKET_ID,KALSHI_ID of a candidate "
                               "`pmw links` lists)")
        lines.append(override_line(polymarket_id, kalshi_id, verdict, candidates[(polymarket_id, kalshi_id)]))
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", encoding="utf-8") as file:
        file.write("".join(f"{line}\n" for line in ([HEADER] if new else []) + lines))
    say(f"pmw links: {len(lines)} line(s) appended to {path}; they count from the next landing of market_links "
        "(pmw links --land, or the asset links/market_links)")


def _days(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} days"
