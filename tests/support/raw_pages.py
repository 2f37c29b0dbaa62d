"""Raw pages kept on disk and read back, one JSON object a line: the tests' proof that a page carries all that
normalization needs (`pipeline.engine.raw_pages.RawPage`), whatever its body."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import date, datetime
from pathlib import Path

import orjson

from pipeline.engine.raw_pages import RawPage


def page_json(page: RawPage) -> bytes:
    return orjson.dumps({
        "api": page.api, "entity": page.entity, "platform": page.platform, "day": page.day.isoformat(),
        "fetched_at": page.fetched_at.isoformat(), "items_key": page.items_key,
        "asked_for": list(page.asked_for), "context": dict(page.context), "body": page.body,
        "conflicting": page.conflicting,
    })


def page_from_json(text: bytes | str) -> RawPage:
    data = orjson.loads(text)
    return RawPage(
        api=data["api"], entity=data["entity"], platform=data["platform"], day=date.fromisoformat(data["day"]),
        fetched_at=datetime.fromisoformat(data["fetched_at"]), body=data["body"], items_key=data["items_key"],
        asked_for=tuple(data["asked_for"]), context=data["context"], conflicting=data.get("conflicting", []),
    )


def save(pages: Iterable[RawPage], path: Path) -> int:
    """Write the pages to `path` as JSON Lines; how many were written."""
    written = 0
    with path.open("wb") as out:
        for page in pages:
            out.write(page_json(page) + b"\n")
            written += 1
    return written


def load(path: Path) -> Iterator[RawPage]:
    """The pages `save` wrote, in the order it wrote them, one at a time."""
    with path.open("rb") as lines:
        for line in lines:
            if line.strip():
                yield page_from_json(line)
