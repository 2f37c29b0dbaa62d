"""Argument types shared by the `pmw` commands (a bad value is refused naming it and what was expected), and the
parser class of a command."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any, TypeAlias

# What `add_subparsers` returns: where each command adds its parser.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
DAY_FORM = re.compile(r"\d{4}-\d{2}-\d{2}")


class CommandParser(argparse.ArgumentParser):
    """The parser of one command. `later_options` adds the options whose defaults come from a module that costs an
    import (the emulator's): they are added only when this command's arguments are parsed or its help is printed,
    so that the other commands never load that module."""

    def __init__(self, *args: Any, later_options: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.later_options = later_options

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        if self.later_options is not None:
            add, self.later_options = self.later_options, None
            add(self)
        return super().parse_known_args(args, namespace)


def day(text: str) -> date:
    """A day written YYYY-MM-DD; a date of that form that the calendar lacks (2026-11-31) is refused as such."""
    try:
        return date.fromisoformat(text)
    except ValueError as error:
        if DAY_FORM.fullmatch(text):
            raise argparse.ArgumentTypeError(f"{text} is not a day of the calendar ({error})") from None
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
