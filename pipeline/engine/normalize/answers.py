"""Single-object answers of the unified API (an orderbook, a profile): the `data` object of each, or why there is
none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar


class Answer(Protocol):
    body: Any


A = TypeVar("A", bound=Answer)


def unwrap(answers: Sequence[A], what: str) -> tuple[list[tuple[A, dict[str, Any]]], list[tuple[Any, str]]]:
    """The answers whose body holds a `data` object, each with it; and the bodies of the others, each with the
    reason it holds no `what` (the API's error, or no `data` object)."""
    held, missing = [], []
    for answer in answers:
        data = answer.body.get("data") if isinstance(answer.body, dict) else None
        if isinstance(data, dict):
            held.append((answer, data))
        else:
            missing.append((answer.body, _no_data(answer.body, what)))
    return held, missing


def _no_data(body: Any, what: str) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return f"no {what}: the API answered {error.get('code')}: {error.get('message')}"
    return f"no `data` object in the {what} answer"
