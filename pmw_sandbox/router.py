"""Which handler answers a path: exact paths first, then templates whose `{...}` segments become arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Handler = Callable[..., Any]


class Router:
    """The handlers of a set of routes, written as paths (`/markets`) or as templates
    (`/markets/{market_id}/orderbook`) whose variable segments are passed to the handler after the query."""

    def __init__(self, routes: Mapping[str, Handler]) -> None:
        self._exact = {path: handler for path, handler in routes.items() if "{" not in path}
        self._templates = [(path.strip("/").split("/"), handler) for path, handler in routes.items() if "{" in path]

    def find(self, path: str) -> tuple[Handler, list[str]] | None:
        """The handler of `path` (without a trailing slash) and the segments it takes, or None."""
        handler = self._exact.get(path)
        if handler is not None:
            return handler, []
        parts = path.strip("/").split("/")
        for template, handler in self._templates:
            if len(template) == len(parts) and all(
                word.startswith("{") or word == part for word, part in zip(template, parts, strict=True)
            ):
                return handler, [part for word, part in zip(template, parts, strict=True) if word.startswith("{")]
        return None
