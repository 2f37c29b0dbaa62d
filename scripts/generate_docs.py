"""Renders the table reference (docs/schema.md) from pipeline/engine/schema/, and the checks table of docs/checks.md
from pipeline/engine/checks.py.

`python -m scripts.generate_docs` rewrites them; a test fails when a committed copy is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.engine.checks import CHECKS, CONCERNED_SHOWN, NAMED_IN_DESCRIPTION
from pipeline.engine.normalize.mappings import (
    DIRECT_MAPPINGS,
    KALSHI_MARKET_TYPES,
    KALSHI_STATUSES,
    KALSHI_VOIDED,
    NOTES,
    POLYMARKET_FLAGS,
    POLYMARKET_MARKET_TYPES,
    POLYMARKET_STATUS_RULES,
    EntityMapping,
)
from pipeline.engine.reconciliation import MVE_PREFIX, VOLUME_TOLERANCE
from pipeline.engine.schema import (
    IMPLIED_PROBABILITY_RELATIVE_TOLERANCE,
    MARKET_PLATFORMS,
    MAX_LIMIT,
    ORDERBOOK_PLATFORMS,
    OVERROUND_TOLERANCE,
    SPORTS_PLATFORMS,
    TABLES,
    BookSide,
    Field,
    League,
    MarketStatus,
    MarketType,
    OutcomeSide,
    Platform,
    Source,
    Table,
    lake_tables,
)
from pipeline.engine.schema.links import MARKET_LINKS, DerivedTable

ROOT = Path(__file__).resolve().parents[1]
DOC_PATH = ROOT / "docs" / "schema.md"
CHECKS_PATH = ROOT / "docs" / "checks.md"


def _describe(field: Field | None, doc: str, enum: tuple[str, ...] | None) -> str:
    notes = []
    if field is not None and field.wire != field.name:
        notes.append(f"wire name `{field.wire}`")
    if field is not None and field.time_format:
        notes.append("ISO 8601 on the wire" if field.time_format == "iso" else "Unix seconds on the wire")
    if field is not None and field.kind == "map":
        notes.append("object on the wire, stored as a list of {key, ...}")
    if field is not None and field.nullable:
        notes.append("nullable")
    if field is not None and field.non_negative:
        notes.append("never negative (a negative value is a reject)")
    if enum:
        notes.append("one of " + ", ".join(f"`{v}`" for v in enum))
    if doc:
        notes.append(doc)
    return "; ".join(notes)


def render_table(table: Table) -> str:
    lines = [
        f"## `{table.name}`",
        "",
        f"{table.doc} Resource: {table.resource}. Primary key: "
        + ", ".join(f"`{c}`" for c in table.primary_key)
        + ". Rows are written sorted by "
        + ", ".join(f"`{c}`" for c in table.sort_key)
        + ".",
        "",
        "| column | type | required | notes |",
        "|---|---|---|---|",
    ]
    for column in table.columns:
        type_label = column.field.type_label() if column.field else Field("x", dtype=column.dtype).type_label()
        notes = _describe(column.field, column.doc if column.field is None else column.field.doc, column.enum)
        lines.append(f"| `{column.name}` | {type_label} | {'yes' if column.required else ''} | {notes} |")
    return "\n".join(lines)


CROSS_PLATFORM_DAILY = """\
### `marts.cross_platform_daily`

The SQL model over `links.market_links` (dbt_like_sql/marts/cross_platform_daily.sql): one row per `linked` pair
and UTC day on which either market traded (key `polymarket_id`, `kalshi_id`, `day`), with `polymarket_close` and
`kalshi_close` in the same outcome's terms, Kalshi's Yes (a `swapped` pair's Polymarket close is 1 - its Yes
price), `gap` = polymarket_close - kalshi_close, both markets' volumes (notional) and trades, and the link's
`outcome_map`, `confidence` and `source`. Its test `cross_platform_daily_pairs_resolved_alike` flags a pair whose
two markets both resolved, and differently: a wrong link, or a difference in their rules worth reading."""


def render_derived(table: DerivedTable) -> str:
    """A table the pipeline derives (links.market_links): its doc, key and columns."""
    lines = [
        f"## `{table.schema}.{table.name}`",
        "",
        f"{table.doc} Primary key: " + ", ".join(f"`{c}`" for c in table.primary_key) + ".",
        "",
        "| column | type | required | notes |",
        "|---|---|---|---|",
    ]
    for column in table.columns:
        notes = _describe(None, column.doc, column.enum)
        lines.append(f"| `{column.name}` | {Field('x', dtype=column.dtype).type_label()} | "
                     f"{'yes' if column.required else ''} | {notes} |")
    return "\n".join(lines)


def render() -> str:
    parts = [
        "# Table reference",
        "",
        "Generated from `pipeline/engine/schema/` by `python -m scripts.generate_docs`; do not edit by hand.",
        "",
        "Every table holds the documented fields of its unified-API resource in snake_case, plus the partition",
        "columns `platform` and `date` and the lineage columns `_source` and `_fetched_at`. Times are UTC.",
        "",
        "## Enums",
        "",
        "| name | values |",
        "|---|---|",
        "| `status` | " + ", ".join(f"`{v}`" for v in MarketStatus) + " |",
        "| `market_type` | " + ", ".join(f"`{v}`" for v in MarketType) + " |",
        "| platform identifiers | " + ", ".join(f"`{v}`" for v in Platform) + " |",
        "| platforms with markets (partitions) | " + ", ".join(f"`{v}`" for v in MARKET_PLATFORMS) + " |",
        "| platforms with orderbooks (partitions of the orderbook tables) | "
        + ", ".join(f"`{v}`" for v in ORDERBOOK_PLATFORMS) + " |",
        "| `outcome_side` | " + ", ".join(f"`{v}`" for v in OutcomeSide) + " |",
        "| `book_side` | " + ", ".join(f"`{v}`" for v in BookSide) + " |",
        "| `_source` | " + ", ".join(f"`{v}`" for v in Source) + " |",
        "| leagues (partitions of the sports tables) | " + ", ".join(f"`{v}`" for v in League) + " |",
        "| platforms of the sports tables | " + ", ".join(f"`{v}`" for v in SPORTS_PLATFORMS) + " |",
        "",
        "Page-size caps of the unified API: " + ", ".join(f"{name} {limit}" for name, limit in MAX_LIMIT.items()) + ".",
        "",
    ]
    tables = lake_tables().values()
    parts.extend(render_table(t) + "\n" for t in tables if t.partitioned_by == "platform")
    parts.append(render_derived(MARKET_LINKS) + "\n")
    parts.append(CROSS_PLATFORM_DAILY + "\n")
    parts.append(render_reconciliation())
    parts.append(render_sports_intro())
    parts.extend(render_table(t) + "\n" for t in tables if t.partitioned_by == "league")
    parts.append(render_direct_mappings())
    return "\n".join(parts)


def render_reconciliation() -> str:
    """The reconciliation checks (pipeline/engine/reconciliation.py): what each holds against what, and the service's
    own figures kept in the partitions' metadata."""
    cents, share = VOLUME_TOLERANCE
    rows = [f"| `{table}` | `{check.name}` | {'ERROR' if check.blocking else 'WARN'} | {check.description} |"
            for table, checks in CHECKS.items() for check in checks if check.reconciles]
    return "\n".join([
        "## Reconciliation checks",
        "",
        "Beside the checks of the rows themselves, each partition holds what it landed against what the service says "
        "about itself, in the answers the partition needed anyway (no request is added). A failure means the "
        "service's own figures say rows are missing: an error (blocking: the SQL models reading the table are held "
        f"back in that run), whose description names the first {NAMED_IN_DESCRIPTION} markets (events, lists, "
        f"answers) concerned, its metadata up to {CONCERNED_SHOWN} (`concerned`) and its examples their figures; "
        "`pmw status` lists it with them. Without such figures (the platforms' own APIs) they pass.",
        "",
        "| asset | check | severity | what it asserts |",
        "|---|---|---|---|",
        *rows,
        "",
        "- A market traded on the day when one of its record's `last_trades` falls inside the day (a trade that "
        "happened stays so, however stale the record), when its `volume_24h` (else `volume_24h_contracts`) is "
        "above 0 on a record whose `last_synced_at` is exactly the day's end (then its 24 hours are the day; a record "
        "synced later says nothing of the day), or when the day's `price_history` partition, landed, holds points of "
        "it with a volume above 0 (read from the lake; `trades` depends on `price_history`, so a run that lands both "
        "lands it first). So a stale record that hid a market's trades from a skip rule does not hide them from the "
        "check.",
        "- On such a record the landed trades' notional (sum of `price` x `size`: the platform's currency, as "
        "`volume_24h` is) may fall short of `volume_24h` by no more than "
        f"{cents} plus {share:.1%} (rounding); `volume_24h_contracts` is held against the contracts (sum of `size`). "
        "More than the volume is not a failure: rows are missing only when less landed.",
        "- Events' `market_count` is held against the markets of the whole catalogue listing whose `event_id` is the "
        f"event's `id` or `platform_id`. Kalshi's multivariate events (`{MVE_PREFIX}...`), whose markets the spec "
        "filters out of results, and placeholder counts (negative, or not whole) are named under `excused`, not "
        "counted.",
        "- A listing (the catalogue's `markets`, `events` and `series`; each market's `/trades`) is held against its "
        "`pagination.total` only when every page gave the same total and the server "
        "itself ended the list (not a stop rule of the pipeline's); a total below the items listed loses nothing. A "
        "server whose total is above what it lists cannot be told from one that lost items: that fails.",
        "- Price history: each answer whose points were kept (not one asked again in halves) holds the points its "
        "`meta.total_points` counts; its `meta.time_range` is shown beside, not judged (the spec does not say whether "
        "it echoes the span asked or gives the span of the points held). In a window's sweep the answers are checked "
        "by the partition whose step swept.",
        "- The sports answers' `meta.platform_errors`, non-empty, is a warning: the platforms named may be missing.",
        "",
        "Every partition of the unified API keeps the service's figures in its materialisation's metadata: "
        "`service_cache_hits` (answers with `meta.cache_hit` true and false), `service_data_freshness` (the "
        "oldest and newest `meta.data_freshness` seen), `service_listing` (a catalogue list's totals, items listed "
        "and whether the server ended it; for trades, the markets' walks summed up), `service_price_answers` "
        "(answers, points, points counted) and, on the sports tables, `service_platform_errors`.",
        "",
    ])


def render_sports_intro() -> str:
    """What the sports tables share: their partitions, their snapshot nature, the tolerances of their checks."""
    return "\n".join([
        "## Sports tables",
        "",
        "`leagues`, `teams`, `futures`, `awards` and `future_odds` are partitioned by `league` and `date` instead of "
        "`platform` and `date` (the lake's directories are `league=<league>/date=<day>`). A partition is the day's "
        "snapshot: the API serves live odds and keeps no history, so a day is landed on that day. Rows belong to "
        "what the pipeline asked for: `league` is the league asked, and an odds row's `future_id` and `kind` are "
        "those of the detail asked. The odds checks allow "
        f"{IMPLIED_PROBABILITY_RELATIVE_TOLERANCE:.0%} for rounding between implied probability, decimal and "
        f"American odds, and report a platform's book of a future whose implied probabilities sum below "
        f"{1 - OVERROUND_TOLERANCE:g} (outcomes missing).",
        "",
    ])


def render_direct_mappings() -> str:
    """What the platforms' own responses fill, column by column, and the status and market-type rules
    (pipeline/engine/normalize/mappings/)."""
    lines = [
        "## Direct sources: field mappings",
        "",
        "With `PMW_SOURCE=direct` (and `pmw normalize --source direct`) the rows come from the platforms' own "
        "APIs, normalized by `pipeline/engine/normalize/polymarket.py` and `kalshi.py` into the same tables.",
        "",
        *(f"- {note}" for note in NOTES),
        "",
    ]
    for mapping in DIRECT_MAPPINGS:
        lines += _render_mapping(mapping)
    flags = list(POLYMARKET_FLAGS)
    lines += [
        "### Polymarket market status",
        "",
        "The first rule whose flags all match gives the status. Flags: "
        + "; ".join(f"{name}: {meaning}" for name, meaning in POLYMARKET_FLAGS.items())
        + ".",
        "",
        "| " + " | ".join(flags) + " | status | why |",
        "|" + "---|" * (len(flags) + 2),
    ]
    for rule in POLYMARKET_STATUS_RULES:
        when = dict(rule.when)
        cells = ["" if name not in when else ("yes" if when[name] else "no") for name in flags]
        lines.append("| " + " | ".join(cells) + f" | `{rule.status}` | {rule.why} |")
    lines += ["", "### Polymarket market type", "", "| rule | market_type |", "|---|---|"]
    lines += [f"| {rule} | `{market_type}` |" for rule, market_type in POLYMARKET_MARKET_TYPES]
    lines += ["", "### Kalshi market status", "", "| `status` | status | why |", "|---|---|---|"]
    lines += [f"| `{s.native}` | `{s.status}` | {s.why} |" for s in KALSHI_STATUSES]
    lines += ["", KALSHI_VOIDED, "", "### Kalshi market type", "", "| `market_type` | market_type |", "|---|---|"]
    lines += [f"| `{native}` | `{market_type}` |" for native, market_type in KALSHI_MARKET_TYPES.items()]
    lines += ["", "Any other Kalshi `status` or `market_type` rejects the market, with the value in the reason.", ""]
    return "\n".join(lines)


def _render_mapping(mapping: EntityMapping) -> list[str]:
    table = TABLES[mapping.table]
    mapped = {source.column for source in mapping.columns}
    unfilled = [c.name for c in table.columns if c.name not in mapped and c.name not in _FROM_THE_CALL]
    lines = [
        f"### {mapping.platform} `{mapping.entity}` -> `{mapping.table}`",
        "",
        f"From {mapping.endpoint}.",
        "",
        "| column | native field(s) | notes |",
        "|---|---|---|",
    ]
    lines += [f"| `{s.column}` | {s.native} | {s.note} |" for s in mapping.columns]
    lines += ["", "Left null: " + (", ".join(f"`{name}`" for name in unfilled) or "none") + ".", ""]
    return lines


_FROM_THE_CALL = ("platform", "date", "_source", "_fetched_at")


def render_checks() -> str:
    lines = ["| asset | check | what it asserts |", "|---|---|---|"]
    lines += [f"| `{table}` | `{check.name}` | {check.description} |"
              for table, checks in CHECKS.items() for check in checks]
    return "\n".join(lines)


def render_checks_doc(page: str) -> str:
    """docs/checks.md with its generated table (between the `checks` markers) brought up to date."""
    start, end = "<!-- checks:start -->", "<!-- checks:end -->"
    head, _, rest = page.partition(start)
    if not rest:
        raise ValueError(f"{CHECKS_PATH.name} has no {start} marker")
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{render_checks()}\n{end}{tail}"


def main() -> int:
    DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
    DOC_PATH.write_text(render())
    CHECKS_PATH.write_text(render_checks_doc(CHECKS_PATH.read_text()))
    print(f"wrote {DOC_PATH} and the checks table of {CHECKS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
