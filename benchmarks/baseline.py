"""The naive baseline the normalizers are measured against: per-record pydantic validation, then pandas.

What a first version of the pipeline would do: validate each parsed record with a pydantic model of its
resource (built here from ``pipeline.engine.schema``, so that it checks the same documented fields), dump it, turn
maps and free-form objects into the stored shapes in Python, collect the rows in a pandas DataFrame and
write it with ``to_parquet`` (pyarrow, zstd). Pydantic runs in its default (lax) mode, as naive code would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import date, datetime
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic import Field as Wire

from pipeline.engine.schema import TABLES, Field

_SCALARS: dict[str, type] = {"String": str, "Float64": float, "Boolean": bool}


def land(table: str, bodies: Iterable[bytes], items_key: str, platform: str, day: date, path: Path) -> int:
    """Parse, validate and write one partition the naive way; return the records read."""
    model = _model(table, TABLES[table].fields)
    maps = [f.name for f in TABLES[table].fields if f.kind == "map"]
    texts = [f.name for f in TABLES[table].fields if f.kind == "json"]
    rows, rejects, records = [], [], 0
    for body in bodies:
        for record in orjson.loads(body)[items_key]:
            records += 1
            try:
                row = model.model_validate(record).model_dump()
            except ValidationError as error:
                rejects.append((record, str(error)))
                continue
            for name in maps:
                row[name] = _entries(row[name])
            for name in texts:
                row[name] = json.dumps(row[name]) if row[name] is not None else None
            rows.append(row)
    frame = pd.DataFrame(rows)
    frame["platform"], frame["date"], frame["_source"], frame["_fetched_at"] = platform, day, "sandbox", datetime.now()
    frame.to_parquet(path, compression="zstd")
    return records


def _entries(value: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """A map as the list of its entries, the key first, as the warehouse stores it."""
    if value is None:
        return None
    return [
        {"key": key, **entry} if isinstance(entry, dict) else {"key": key, "value": entry}
        for key, entry in value.items()
    ]


def _model(name: str, fields: tuple[Field, ...]) -> type[BaseModel]:
    """A pydantic model of the documented fields: wire names as aliases, required fields without default."""
    definitions: dict[str, Any] = {
        field.name: (
            _annotation(field) if field.required else _annotation(field) | None,
            Wire(alias=field.wire) if field.required else Wire(None, alias=field.wire),
        )
        for field in fields
    }
    return create_model(name, __config__=ConfigDict(populate_by_name=True), **definitions)


def _annotation(field: Field) -> Any:
    if field.kind == "timestamp":
        return datetime
    if field.kind == "json":
        return dict[str, Any]
    if field.kind == "struct":
        return _model(field.name, field.children)
    item = _model(field.name, field.children) if field.children else _SCALARS[type(field.dtype).__name__]
    if field.kind == "list":
        return list[item]
    if field.kind == "map":
        return dict[str, item]
    return item
