"""Renders the table reference (docs/schema.md, and README sections) from pipeline/schema.py.

`python -m pipeline.schema_docs` rewrites them; a test fails when a committed copy is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.checks import CHECKS
from pipeline.schema import (
    MARKET_PLATFORMS,
    MAX_LIMIT,
    TABLES,
    Field,
    MarketStatus,
    MarketType,
    Platform,
    Source,
    Table,
)

ROOT = Path(__file__).resolve().parent.parent
DOC_PATH = ROOT / "docs" / "schema.md"
README_PATH = ROOT / "README.md"


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


def render() -> str:
    parts = [
        "# Table reference",
        "",
        "Generated from `pipeline/schema.py` by `python -m pipeline.schema_docs`; do not edit by hand.",
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
        "| `_source` | " + ", ".join(f"`{v}`" for v in Source) + " |",
        "",
        "Page-size caps of the unified API: " + ", ".join(f"{name} {limit}" for name, limit in MAX_LIMIT.items()) + ".",
        "",
    ]
    parts.extend(render_table(t) + "\n" for t in TABLES.values())
    return "\n".join(parts)


def render_checks() -> str:
    lines = ["| asset | check | what it asserts |", "|---|---|---|"]
    lines += [f"| `{table}` | `{check.name}` | {check.description} |"
              for table, checks in CHECKS.items() for check in checks]
    return "\n".join(lines)


def _between(text: str, marker: str, body: str) -> str:
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    if not rest:
        raise ValueError(f"README.md has no {start} marker")
    return f"{head}{start}\n{body}\n{end}{tail}"


def render_readme(readme: str) -> str:
    """README with its generated sections (table reference, checks) brought up to date."""
    tables = "\n".join(render_table(t).replace("## ", "### ", 1) + "\n" for t in TABLES.values())
    return _between(_between(readme, "schema", tables), "checks", render_checks())


def main() -> int:
    DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
    DOC_PATH.write_text(render())
    README_PATH.write_text(render_readme(README_PATH.read_text()))
    print(f"wrote {DOC_PATH} and the generated sections of {README_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
