"""Argument types shared by the `pmw` commands: a bad value is refused naming it and what was expected."""

from __future__ import annotations

import argparse
from datetime import date


def day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a day as YYYY-MM-DD, got {text!r}") from None


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds (fractions allowed)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text}")
    return value
