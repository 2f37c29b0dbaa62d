"""Switchable faults of the sandbox, for tests that prove the pipeline survives a misbehaving API."""

from __future__ import annotations

import random
from dataclasses import dataclass

from pipeline.engine.schema import Platform
from pmw_sandbox.switches import parse_switches


@dataclass(frozen=True)
class Faults:
    """Every switch is off by default. Decisions are deterministic per request number and `seed`."""

    error_rate: float = 0.0  # share of requests answered 500 or 503
    burst_429_every: int = 0  # every N requests, a burst of 429s ...
    burst_429_length: int = 0  # ... this many requests long
    latency_ms: float = 0.0  # added to every answer
    malformed_page_rate: float = 0.0  # share of 200 answers whose JSON body is cut in half
    duplicate_items: int = 0  # items of one page repeated at the start of the next
    unknown_fields: bool = False  # records and envelopes carry fields the spec does not document
    cursor_expiry_rate: float = 0.0  # share of cursors that have expired when they come back
    malformed_record: bool = False  # the first trades page served carries one extra, broken trade
    crossed_book: bool = False  # every orderbook served is crossed: its best YES bid above its best ask
    seed: int = 0
    # Platforms that /platforms reports unavailable (status: the reading `unavailable_status`; health `fail`; no
    # endpoint available) and /health names as failing, joined by `+` (`kalshi`, `kalshi+polymarket`); their data
    # endpoints still answer.
    unavailable: str = ""

    def __post_init__(self) -> None:
        for name in ("error_rate", "malformed_page_rate", "cursor_expiry_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"fault {name} must be between 0 and 1, got {value}")
        for name in ("burst_429_every", "burst_429_length", "duplicate_items"):
            if getattr(self, name) < 0:
                raise ValueError(f"fault {name} must be >= 0, got {getattr(self, name)}")
        if self.burst_429_length and self.burst_429_length >= max(self.burst_429_every, 1):
            raise ValueError("fault burst_429_length must be smaller than burst_429_every")
        unknown = sorted(set(self.unavailable_platforms) - {p.value for p in Platform})
        if unknown:
            raise ValueError(f"fault unavailable names unknown platform(s) {', '.join(unknown)}; expected some of "
                             f"{', '.join(p.value for p in Platform)} joined by +")

    @property
    def unavailable_platforms(self) -> frozenset[str]:
        """The platforms /platforms reports unavailable."""
        return frozenset(filter(None, (name.strip() for name in self.unavailable.split("+"))))

    @classmethod
    def parse(cls, spec: str) -> Faults:
        """`"error_rate=0.05,unknown_fields=true"` -> Faults; names and values are checked."""
        return parse_switches(cls, spec, "fault")

    def roll(self, request_number: int) -> random.Random:
        """The random source for one request's fault decisions."""
        return random.Random(f"{self.seed}:{request_number}")

    def in_429_burst(self, request_number: int) -> bool:
        if not self.burst_429_every or not self.burst_429_length:
            return False
        return request_number % self.burst_429_every >= self.burst_429_every - self.burst_429_length
