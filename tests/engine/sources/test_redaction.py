"""The key never survives in text: whole, URL-encoded, in pieces of eight characters or more, or cut short."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from pipeline.engine.sources.redaction import MIN_FRAGMENT, REDACTED, Redactor

KEY = "sk-live/DO+NOT=LEAK-0042"


def pieces_of(key: str, text: str) -> list[str]:
    """The runs of `key`'s characters, MIN_FRAGMENT long, found in `text`, in either form of the key."""
    forms = (key, quote(key, safe=""))
    pieces = [form[i : i + MIN_FRAGMENT] for form in forms for i in range(len(form) - MIN_FRAGMENT + 1)]
    return [piece for piece in pieces if piece in text]


@pytest.mark.parametrize(
    "echo",
    [KEY, quote(KEY, safe=""), KEY[:MIN_FRAGMENT], KEY[5:19], quote(KEY, safe="")[3:15], KEY + KEY[:10]],
    ids=["whole", "url-encoded", "first 8", "a middle piece", "a piece url-encoded", "whole then a piece"],
)
def test_every_form_and_piece_of_the_key_is_replaced(echo: str) -> None:
    text = f"<html>denied: {echo} (retry later)</html>"
    redacted = Redactor(KEY)(text)
    assert pieces_of(KEY, redacted) == []
    assert redacted.startswith("<html>denied: ") and redacted.endswith(" (retry later)</html>")
    assert REDACTED in redacted


@pytest.mark.parametrize("at", range(100, 125))
def test_a_cut_never_leaves_a_piece_of_the_key(at: int) -> None:
    text = "x" * at + KEY + " and more " * 20
    redacted = Redactor(KEY)(text, limit=120)
    assert len(redacted) <= 120
    assert pieces_of(KEY, redacted) == []


def test_short_runs_and_other_text_are_left_alone() -> None:
    text = f"an ordinary {KEY[:MIN_FRAGMENT - 1]} word, sk-live elsewhere"
    assert Redactor(KEY)(text) == text
    assert Redactor(None)(text, limit=10) == text[:10]


def test_a_key_shorter_than_a_piece_is_replaced_whole() -> None:
    assert Redactor("abc12")("key abc12 seen") == f"key {REDACTED} seen"


def _encoded_echoes(key: str) -> dict[str, str]:
    """The key as a server or a library may echo it: base64 (alone, or inside a longer value at each alignment,
    standard and URL-safe), JSON-escaped, HTML entities (decimal, hex) and every character percent-encoded."""
    import base64
    import json

    raw = key.encode()
    echoes = {f"base64 after {n} byte(s)": base64.b64encode(b"user:"[:n] + raw + b"!").decode() for n in range(3)}
    echoes["base64, URL-safe"] = base64.urlsafe_b64encode(b"u:" + raw).decode()
    echoes["basic auth"] = "Basic " + base64.b64encode(b"anyone:" + raw).decode()
    echoes["json"] = json.dumps({"key": key})
    echoes["json, slashes escaped"] = json.dumps({"key": key}).replace("/", "\\/")
    echoes["json, every character escaped"] = "".join(f"\\u{ord(c):04x}" for c in key)
    echoes["html, decimal entities"] = "".join(f"&#{ord(c)};" for c in key)
    echoes["html, hex entities"] = "".join(f"&#x{ord(c):X};" for c in key)
    echoes["every character percent-encoded"] = "".join(f"%{ord(c):02x}" for c in key)
    return echoes


@pytest.mark.parametrize("encoding", list(_encoded_echoes(KEY)))
def test_the_key_is_replaced_in_other_encodings(encoding: str) -> None:
    """Issue 39, point 13: an echo of the key in base64, JSON, HTML entities or percent-encoding leaves no run of
    it behind that decodes back to MIN_FRAGMENT of the key's characters."""
    echo = _encoded_echoes(KEY)[encoding]
    redacted = Redactor(KEY)(f"<p>denied: {echo} (retry later)</p>")
    assert echo not in redacted and REDACTED in redacted, redacted
    assert redacted.startswith("<p>denied: ") and redacted.endswith(" (retry later)</p>")
