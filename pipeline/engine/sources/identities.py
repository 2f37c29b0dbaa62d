"""Which items of a listing are the same: their identities (`field_keys`, `content_keys`), and `SeenKeys` (`SeenIds`
for a catalogue's listing), which remembers those a walk has met and tells the new items, the plain repeats and the
repeats with other values."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np
import orjson
import polars as pl

from pipeline.engine.sources.http import RequestStats

Keys = Callable[[list[Any]], list[Hashable | None]]  # a page's items -> their identities (None: none usable)


def field_keys(name: str) -> Keys:
    """Items identified by one field (`id`, `trade_id`, `ticker`)."""
    return partial(_field_keys, name)


def _field_keys(name: str, items: list[Any]) -> list[Hashable | None]:
    if set(map(type, items)) <= {dict}:
        identities = list(map(dict.get, items, repeat(name)))
        if set(map(type, identities)) <= {str, type(None)}:  # the usual case: no Python bytecode per item
            return identities
    return [_identity(item, name) for item in items]


def _identity(item: Any, name: str) -> Hashable | None:
    """The item's identity, or None when it has none usable (not an object, missing, or not hashable)."""
    try:
        identity = item[name]
        hash(identity)
    except (KeyError, TypeError, IndexError):
        return None
    return identity


def content_keys(items: list[Any]) -> list[Hashable | None]:
    """Items that carry no id (Data API trades), identified by their whole content as sent (one server writes
    one record alike each time) and, among identical items of one page (fills that differ in nothing the API
    shows), by their place among them: a page that starts with the items that ended the page before (new
    trades pushed them down) repeats none of them."""
    texts: list[Hashable | None] = list(map(bytes.decode, map(orjson.dumps, items)))
    column = pl.Series("item", texts, dtype=pl.String())
    if not column.is_duplicated().any():  # the usual page
        return texts
    place = pl.int_range(pl.len()).over("item")
    return column.to_frame().select(  # the first of identical items is known as the item alone, as on any page
        pl.when(place == 0).then(pl.col("item")).otherwise(pl.concat_str(pl.col("item"), place.cast(pl.String),
                                                                          separator="#"))
    ).to_series().to_list()


def fingerprints(items: list[Any]) -> np.ndarray:
    """A 64-bit hash of each item's content, whatever the order of its fields (a server may send one record's
    fields in any order): two versions of one record with other values get other fingerprints. An object of
    flat values is hashed as its sorted field names and its values in that order; a page of such objects with
    the same fields, the usual trades page, in C. Any other item is hashed as its JSON text with sorted keys.
    Python's hash is salted per process: fingerprints are compared within one process only."""
    if items and set(map(type, items)) <= {dict} and len(set(map(len, items))) == 1:
        names = tuple(sorted(items[0]))
        try:  # one field missing from an item (KeyError) or a value that is a list or an object (TypeError)
            values = np.fromiter(map(hash, map(itemgetter(*names), items)), dtype=np.int64, count=len(items))
            return values ^ np.int64(hash(names))
        except KeyError:
            pass
        except TypeError:  # the usual catalogue page: the same fields, some of them objects; its names sorted once
            return np.fromiter(map(_same_fields(names), items), dtype=np.int64, count=len(items))
    return np.fromiter(map(_fingerprint, items), dtype=np.int64, count=len(items))


def _same_fields(names: tuple[str, ...]) -> Callable[[dict[str, Any]], int]:
    """`_fingerprint` for objects whose sorted field names are `names` (an object missing one is sorted anew)."""
    getter, salt = itemgetter(*names), hash(names)

    def fingerprint(item: dict[str, Any]) -> int:
        try:
            values = getter(item)
        except KeyError:
            return _fingerprint(item)
        try:
            return hash(values) ^ salt
        except TypeError:
            return _json_fingerprint(item)

    return fingerprint


def _fingerprint(item: Any) -> int:
    """`fingerprints` of one item: the same number for the same content, whichever way it is computed."""
    if type(item) is dict and item:
        names = tuple(sorted(item))
        try:
            return hash(itemgetter(*names)(item)) ^ hash(names)
        except TypeError:
            pass
    return _json_fingerprint(item)


def _json_fingerprint(item: Any) -> int:
    try:
        return hash(orjson.dumps(item, option=orjson.OPT_SORT_KEYS))
    except orjson.JSONEncodeError:  # nested deeper than orjson writes: the normalizer rejects such an item anyway
        return hash(repr(item))


@dataclass(frozen=True)
class Met:
    """Per item of a page: whether it is met for the first time (`new`), and whether it repeats an identity
    already kept with another content (`conflicting`); an item that is neither is a plain repeat."""

    new: list[bool]
    conflicting: list[bool]


class SeenKeys:
    """The identities of the items paging has kept so far, each with its content's fingerprint, to drop the
    ones it meets again (after a cursor restart, or when pages overlap) and tell the plain repeats from the
    conflicting ones, with the counters. Text identities (a trade id) are kept as two 64-bit hashes and the
    fingerprint, 24 bytes each where a Python set of the strings took over 150 (a busy market has millions:
    298 MB for 1.9 M ids, most of the memory benchmark's excess over 1 GB), in sorted runs merged as they grow
    and looked up by binary search; a repeat is one whose 128 bits match. Other identities (numbers) go to a
    dict.
    """

    def __init__(self, stats: RequestStats) -> None:
        self.stats = stats
        self._runs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._others: dict[Hashable, int] = {}

    def meet(self, identities: list[Hashable | None], contents: np.ndarray) -> Met:
        """Which items are new (always, when it has no identity) and which repeat a kept identity with another
        content (`contents`: the items' `fingerprints`); remembers the new ones."""
        texts = pl.Series([i if type(i) is str else None for i in identities], dtype=pl.String())
        new, conflicting = self._meet_texts(texts, contents)
        for position, identity in enumerate(identities):
            if identity is None or type(identity) is str:
                continue
            content = int(contents[position])
            if identity in self._others:
                new[position], conflicting[position] = False, self._others[identity] != content
            else:
                self._others[identity] = content
        met = Met(new.tolist(), conflicting.tolist())
        self.stats.conflicting_repeats += met.conflicting.count(True)
        self.stats.duplicates_dropped += met.new.count(False) - met.conflicting.count(True)
        return met

    def _meet_texts(self, texts: pl.Series, contents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hashed = texts.to_frame("id").select(  # one polars call a page: its cost is per call, not per item
            pl.col("id").hash(seed=0).alias("a"),
            pl.col("id").hash(seed=1).alias("b"),
            (pl.col("id").is_first_distinct() | pl.col("id").is_null()).alias("first"),
            pl.col("id").is_not_null().alias("known"),
        )
        a, b, known = hashed["a"].to_numpy(), hashed["b"].to_numpy(), hashed["known"].to_numpy()
        first = hashed["first"].to_numpy()
        repeated = np.zeros(len(texts), dtype=bool)
        kept_content = contents.copy()  # an item's own, until it is found kept before
        for run_a, run_b, run_content in self._runs:
            at = np.minimum(np.searchsorted(run_a, a), len(run_a) - 1)
            found = (run_a[at] == a) & (run_b[at] == b)
            if found.any():  # the usual page finds none
                repeated |= found
                kept_content[found] = run_content[at[found]]
        if not first.all():  # an identity twice on this page: its first place holds the version kept
            kept_content = np.where(repeated, kept_content, texts.to_frame("id").with_columns(content=contents)
                                    .select(pl.col("content").first().over("id")).to_series().to_numpy())
        new = first & ~(repeated & known)
        self._add(a[new & known], b[new & known], contents[new & known])
        return new, known & (kept_content != contents)

    def _add(self, a: np.ndarray, b: np.ndarray, content: np.ndarray) -> None:
        if not len(a):
            return
        order = np.argsort(a, kind="stable")
        self._runs.append((a[order], b[order], content[order]))
        while len(self._runs) > 1 and len(self._runs[-2][0]) <= 2 * len(self._runs[-1][0]):
            (a1, b1, c1), (a2, b2, c2) = self._runs.pop(), self._runs.pop()
            a, b, content = np.concatenate([a2, a1]), np.concatenate([b2, b1]), np.concatenate([c2, c1])
            order = np.argsort(a, kind="stable")
            self._runs.append((a[order], b[order], content[order]))


class SeenIds(SeenKeys):
    """`SeenKeys` for a listing of at most some hundred thousand items (a catalogue): the identities in a dict, each
    with its content's fingerprint, so that a page of new items, the usual one, is met without a call into polars
    or numpy per page (a dict of a million ids takes about 100 MB: not for the trades)."""

    def __init__(self, stats: RequestStats) -> None:
        super().__init__(stats)
        self._kept: dict[Hashable, int] = {}

    def meet(self, identities: list[Hashable | None], contents: np.ndarray) -> Met:
        kept, prints = self._kept, contents.tolist()
        if (None not in identities and not any(map(kept.__contains__, identities))
                and len(set(identities)) == len(identities)):  # all new
            kept.update(zip(identities, prints, strict=True))
            return Met([True] * len(identities), [False] * len(identities))
        new, conflicting = [], []
        for identity, content in zip(identities, prints, strict=True):
            first = identity is None or identity not in kept
            if first and identity is not None:
                kept[identity] = content
            new.append(first)
            conflicting.append(not first and kept[identity] != content)
        self.stats.conflicting_repeats += conflicting.count(True)
        self.stats.duplicates_dropped += new.count(False) - conflicting.count(True)
        return Met(new, conflicting)
