"""The API key taken out of any text that could reach a log line, an exception message or metadata.

A server may echo the key whole, URL-encoded (a request URL in an error page), or in part (an error page cut
short, a log line of its own that wraps). Every run of the key's characters at least ``MIN_FRAGMENT`` long, in
either form, is replaced; a key shorter than that is replaced whole. Text is redacted before it is cut to a
length, so that a cut can never leave a piece of the key behind the place where the whole key would have been
recognised.
"""

from __future__ import annotations

import re
from urllib.parse import quote

REDACTED = "***"
MIN_FRAGMENT = 8  # shorter runs of the key's characters are too common in ordinary text to tell apart


class Redactor:
    """Replaces the pieces of one secret in texts; with no secret, gives texts back as they are (cut)."""

    def __init__(self, secret: str | None) -> None:
        forms = {secret, quote(secret, safe="")} if secret else set()
        pieces = {form[i : i + MIN_FRAGMENT] for form in forms for i in range(len(form) - MIN_FRAGMENT + 1)}
        pieces |= {form for form in forms if len(form) < MIN_FRAGMENT}
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
