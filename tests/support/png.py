"""A PNG reader for screenshots (8-bit RGB or RGBA, not interlaced), with the stdlib's zlib and numpy: enough to
count the colours of what a browser drew, without an imaging library."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # PNG colour type -> channels: RGB, RGBA


def read_png(path: Path) -> np.ndarray:
    """The image as an array of (height, width, channels) uint8."""
    data = path.read_bytes()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path} is not a PNG file")
    header, compressed = _chunks(data)
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour_type not in CHANNELS or interlace:
        raise ValueError(f"{path}: only 8-bit RGB(A), non-interlaced PNG files are read here")
    channels = CHANNELS[colour_type]
    rows = np.frombuffer(zlib.decompress(compressed), dtype=np.uint8).reshape(height, 1 + width * channels)
    return _unfilter(rows, channels).reshape(height, width, channels)


def _chunks(data: bytes) -> tuple[bytes, bytes]:
    """The IHDR chunk's body and the IDAT chunks' bodies joined."""
    position, header, compressed = len(SIGNATURE), b"", []
    while position < len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        kind, body = data[position + 4:position + 8], data[position + 8:position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            compressed.append(body)
    return header, b"".join(compressed)


def _unfilter(rows: np.ndarray, channels: int) -> np.ndarray:
    """Undo each row's filter (PNG spec 9.2: none, sub, up, average, paeth)."""
    out = np.zeros((rows.shape[0], rows.shape[1] - 1), dtype=np.uint8)
    previous = np.zeros(rows.shape[1] - 1, dtype=np.uint8)
    for index, row in enumerate(rows):
        kind, line = row[0], row[1:]
        if kind == 0:
            current = line.copy()
        elif kind == 1:  # sub: a running sum per channel, modulo 256
            current = np.cumsum(line.reshape(-1, channels), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:
            current = line + previous
        else:
            current = _unfilter_sequential(kind, line, previous, channels)
        out[index] = previous = current
    return out


def _unfilter_sequential(kind: int, line: np.ndarray, previous: np.ndarray, channels: int) -> np.ndarray:
    """Average and Paeth depend on the byte just decoded to their left: byte by byte."""
    filtered, above = line.tolist(), previous.tolist()
    current = [0] * len(filtered)
    for i, value in enumerate(filtered):
        left = current[i - channels] if i >= channels else 0
        if kind == 3:
            current[i] = (value + (left + above[i]) // 2) & 0xFF
        else:
            upper_left = above[i - channels] if i >= channels else 0
            current[i] = (value + _paeth(left, above[i], upper_left)) & 0xFF
    return np.array(current, dtype=np.uint8)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c
