"""Switches given as text (`"name=value,name=value"`), for the sandbox's faults and readings."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def parse_switches(cls: type[T], spec: str, what: str) -> T:
    """`"error_rate=0.05,unknown_fields=true"` -> `cls(error_rate=0.05, unknown_fields=True)`; names and
    values are checked against the dataclass `cls`'s fields (bool, int, float or str), `what` names them."""
    known = {f.name: f.type for f in fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, raw = item.partition("=")
        if not sep or name not in known:
            raise ValueError(f"unknown {what} {item!r}; expected name=value with name one of {sorted(known)}")
        kind = known[name]
        try:
            values[name] = _value(str(kind), raw)
        except ValueError:
            raise ValueError(f"{what} {name} needs a {kind} value, got {raw!r}") from None
    return cls(**values)


def _value(kind: str, raw: str) -> Any:
    if kind == "bool":
        if raw.lower() not in ("true", "false", "1", "0"):
            raise ValueError(raw)
        return raw.lower() in ("true", "1")
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw)
    return raw
