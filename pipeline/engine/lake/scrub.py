"""The scheduled scrub: the lake files changed since the last scrub read back against their checksums, its outcome
kept in the lake.

Each file is checked by verify.py, as `pmw verify` checks it. A scrub keeps, under `_scrub/` in the lake (shared
by every host of a lake on an object store), what it found (`ScrubRecord`: when, how many files, which are bad)
and the stamp (`LakeStore.stamp`) of every file it found whole. The next scrub reads only the files whose stamp
changed since (written, replaced, restored, edited in place) and those still bad, unless no whole-lake scrub is
recorded or the last is `whole_every` old: then every file. A bit flipped by the disk under a file changes no
stamp, which is what the whole-lake scrub is for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pipeline.engine.lake.storage import Location
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.verify import BadFile, LakeFile, lake_files, unreadable_paths, verify_lake_file

SCRUB_DIR = "_scrub"  # `_` keeps it off the tables' names
RECORD_KEY = f"{SCRUB_DIR}/last.json"
STAMPS_KEY = f"{SCRUB_DIR}/verified.json"


@dataclass(frozen=True)
class ScrubRecord:
    """What the last scrub found: when it ended, whether it read the whole lake or the changed files, how many
    files it read and which were bad; and when the lake was last read whole."""

    finished_at: datetime
    whole: bool
    checked: int
    bad: tuple[BadFile, ...]
    whole_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {"finished_at": self.finished_at.isoformat(), "whole": self.whole, "checked": self.checked,
                "bad": [{"table": b.table, "path": str(b.path), "problem": b.problem} for b in self.bad],
                "whole_at": self.whole_at.isoformat() if self.whole_at else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScrubRecord:
        return cls(datetime.fromisoformat(data["finished_at"]), bool(data["whole"]), int(data["checked"]),
                   tuple(BadFile(b["table"], b["path"], b["problem"]) for b in data["bad"]),
                   datetime.fromisoformat(data["whole_at"]) if data["whole_at"] else None)


def last_scrub(lake: Lake) -> ScrubRecord | None:
    """The record of the lake's last scrub; None when none is recorded (or its record does not read)."""
    data = _read_json(lake, RECORD_KEY)
    try:
        return ScrubRecord.from_json(data) if isinstance(data, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def scrub(lake: Lake, now: datetime, whole_every: timedelta,
          seen: Callable[[Location, BadFile | None], None] = lambda _path, _bad: None) -> ScrubRecord:
    """Read back the files changed since the last scrub (every file when the lake was not read whole within
    `whole_every`; `timedelta(0)`: every file), record what was found at `now`, and return it. `seen` is told of
    each file read (and of each path that cannot be listed) as it is, with what is wrong with it."""
    previous = last_scrub(lake)
    whole = previous is None or previous.whole_at is None or now - previous.whole_at >= whole_every
    verified: dict[str, list[Any]] = {} if whole else _read_json(lake, STAMPS_KEY) or {}
    stamps: dict[str, list[Any]] = {}
    bad = list(unreadable_paths(lake))
    for unreadable in bad:
        seen(unreadable.path, unreadable)
    checked = 0
    for file, stamp in _stamped_files(lake):
        if verified.get(file.key) != stamp:
            checked += 1
            path = lake.store.location(file.key)
            problem = verify_lake_file(lake, file)
            seen(path, None if problem is None else BadFile(file.table, path, problem))
            if problem is not None:
                bad.append(BadFile(file.table, path, problem))
                continue  # left out of the stamps: read again by every scrub until it is put right
        stamps[file.key] = stamp
    record = ScrubRecord(now, whole, checked, tuple(bad), now if whole else previous.whole_at if previous else None)
    try:
        _write_json(lake, STAMPS_KEY, stamps)
        _write_json(lake, RECORD_KEY, record.as_json())
    except OSError as error:
        raise ScrubNotRecordedError(f"the lake was scrubbed ({len(bad)} bad file(s)) but its record could not be "
                                    f"written to {lake.store.location(SCRUB_DIR)}: {error}") from error
    return record


class ScrubNotRecordedError(OSError):
    """The scrub read the files, but its record could not be written to the lake."""


def _stamped_files(lake: Lake) -> Iterator[tuple[LakeFile, list[Any]]]:
    """Each lake file with its stamp as JSON keeps it, taken before it is read (a file replaced meanwhile is read
    again next time); a file gone since the listing is passed over."""
    for file in lake_files(lake):
        stamp = lake.store.stamp(file.key)
        if stamp is not None:
            yield file, json.loads(json.dumps(list(stamp), default=str))


def _read_json(lake: Lake, key: str) -> Any:
    handle = lake.store.open_read(key)
    if handle is None:
        return None
    with handle:
        try:
            return json.loads(handle.read())
        except ValueError:
            return None


def _write_json(lake: Lake, key: str, data: Any) -> None:
    with lake.replacing(key) as temporary:
        temporary.write_text(json.dumps(data))
