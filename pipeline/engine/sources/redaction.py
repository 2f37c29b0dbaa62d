"""The API key taken out of any text that could reach a log line, an exception message or metadata.

A server may echo the key whole, encoded (URL, base64 as in a Basic header, JSON or HTML escapes), or in part (an
error page cut short). Every run of at least ``MIN_FRAGMENT`` of the key's characters, in any of those forms, is
replaced; a key shorter than that is replaced whole. Text is redacted before it is cut, so that a cut never leaves
a piece of the key behind.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from urllib.parse import quote

REDACTED = "***"
MIN_FRAGMENT = 8  # shorter runs of the key's characters are too common in ordinary text to tell apart


class Redactor:
    """Replaces the pieces of one secret in texts; with no secret, gives texts back as they are (cut)."""

    def __init__(self, secret: str | None) -> None:
        forms = {secret, quote(secret, safe=""), json.dumps(secret)[1:-1], *_base64_forms(secret)} if secret else set()
        pieces = {form[i : i + MIN_FRAGMENT] for form in forms for i in range(len(form) - MIN_FRAGMENT + 1)}
        pieces |= {form for form in forms if len(form) < MIN_FRAGMENT}
        if secret:  # escapes of every character: a piece is MIN_FRAGMENT of the key's characters, escaped
            runs = [secret[i : i + MIN_FRAGMENT] for i in range(max(len(secret) - MIN_FRAGMENT, 0) + 1)]
            pieces |= {escape(run) for escape in CHARACTER_ESCAPES for run in runs}
            forms |= {escape(secret) for escape in CHARACTER_ESCAPES}
        self._longest = max(map(len, forms), default=0)
        # A lookahead finds every place a piece starts, overlapping ones included.
        alternatives = "|".join(re.escape(piece) for piece in sorted(pieces, key=len, reverse=True))
        self._pieces = re.compile(f"(?=({alternatives}))") if pieces else None

    def __call__(self, text: str, limit: int | None = None) -> str:
        """`text` with every piece of the secret replaced by REDACTED, then cut to `limit` characters."""
        if limit is not None:
            text = text[: limit + self._longest]  # whatever starts before the cut ends inside this
        if self._pieces is not None:
            text = _replaced(self._pieces, text)
        return text if limit is None else text[:limit]


def _escaped(each: Callable[[int], str]) -> Callable[[str], str]:
    return lambda text: "".join(each(ord(c)) for c in text)


# Every character escaped, as HTML entities, JSON's \u escapes or percent-encoding (either case of hex digits).
CHARACTER_ESCAPES: tuple[Callable[[str], str], ...] = (
    _escaped(lambda c: f"&#{c};"), _escaped(lambda c: f"&#x{c:X};"), _escaped(lambda c: f"&#x{c:x};"),
    _escaped(lambda c: f"\\u{c:04x}"), _escaped(lambda c: f"\\u{c:04X}"),
    _escaped(lambda c: f"%{c:02X}"), _escaped(lambda c: f"%{c:02x}"),
)


def _base64_forms(secret: str) -> list[str]:
    """The base64 characters that depend on the key's bytes alone, wherever the key starts in the encoded value
    (three alignments), in the standard and the URL-safe alphabet."""
    raw, forms = secret.encode(), []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw + bytes(3)).decode()
        first, last = -(-8 * offset // 6), 8 * (offset + len(raw)) // 6  # characters whose 6 bits are all the key's
        stable = encoded[first:last]
        forms += [stable, stable.translate(str.maketrans("+/", "-_"))]
    return forms


def _replaced(pieces: re.Pattern[str], text: str) -> str:
    """`text` with each stretch covered by overlapping matches of `pieces` replaced by one REDACTED."""
    spans: list[list[int]] = []
    for match in pieces.finditer(text):
        start, end = match.start(), match.start() + len(match.group(1))
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    kept, position = [], 0
    for start, end in spans:
        kept += [text[position:start], REDACTED]
        position = end
    return "".join([*kept, text[position:]])
