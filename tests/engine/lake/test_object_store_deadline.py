"""PMW_LAKE_DEADLINE_S bounds every object-store operation: a GET trickled a byte at a time, or a PUT never
answered, fails within the deadline, in one line naming the object and the setting (issue 39, point 3)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipeline.engine.lake.storage import ObjectStore, open_store
from tests.support.raw_http import Answer, raw_http_server
from tests.support.servers import S3_TEST_CREDENTIALS

DEADLINE_S = 1.0
KEY = "trades/platform=kalshi/date=2026-11-20/data.parquet"

def _trickled_get(connection: socket.socket, stop: threading.Event) -> None:
    """An object of 20 bytes, its body sent a byte every 0.5 s (10 s in all)."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\nContent-Type: binary/octet-stream\r\n"
                       b'ETag: "0123"\r\n\r\n')
    for _ in range(20):
        if stop.wait(0.5):
            return
        connection.sendall(b"x")


def _never_answered(connection: socket.socket, stop: threading.Event) -> None:
    stop.wait()


def _unavailable(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@contextmanager
def _store_at(answer: Answer, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ObjectStore, list[str]]]:
    """A store on a `raw_http_server`, its client made beforehand (the deadline is then the request's alone), and the
    methods of the requests the server took."""
    with raw_http_server(answer) as (endpoint, methods):
        for name, value in {"AWS_ENDPOINT_URL": endpoint, **S3_TEST_CREDENTIALS}.items():
            monkeypatch.setenv(name, value)
        store = open_store("s3://bucket/lake", tmp_path, deadline_s=DEADLINE_S)
        assert isinstance(store, ObjectStore)
        store.fs.connect()
        yield store, methods


def _fails_within_the_deadline(call: Callable[[], object], doing: str, operations: int = 1) -> None:
    """`call` fails naming what it was doing within the deadline of each of its `operations`."""
    started = time.monotonic()
    with pytest.raises(TimeoutError) as caught:
        call()
    elapsed = time.monotonic() - started
    assert elapsed < operations * DEADLINE_S + 2, elapsed
    assert str(caught.value) == (f"{doing} s3://bucket/lake/{KEY}: not done within the deadline of 1 s "
                                 f"(PMW_LAKE_DEADLINE_S)")


def test_a_trickled_read_fails_within_its_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A GET body trickled at a byte per 0.5 s held a backfill past 240 s."""
    with _store_at(_trickled_get, tmp_path, monkeypatch) as (store, methods):
        _fails_within_the_deadline(lambda: store.open_read(KEY), "reading")
    assert methods == ["GET"]


def test_an_unanswered_write_fails_within_its_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """S3 requests never answered turned 14 s into 818 s, silently. (A PUT waits for `100 Continue` with no
    timeout of the client's own: only the deadline ends it.) A process's first write to a lake looks first for the
    uploads left open under it (a GET, pipeline/engine/lake/uploads.py; not again if an earlier test of this process
    wrote to one of the same name): unanswered too, it passes its own deadline with a warning, and the write goes on
    to its own."""
    written = tmp_path / "written.parquet"
    written.write_bytes(b"PAR1" * 100)
    with _store_at(_never_answered, tmp_path, monkeypatch) as (store, methods):
        _fails_within_the_deadline(lambda: store.publish(written, KEY), "writing", operations=2)
    assert methods in (["GET", "PUT"], ["PUT"])


@pytest.mark.parametrize(("answer", "cause"), [(_unavailable, "status 503"), (_never_answered, "ReadTimeoutError")])
def test_each_failed_request_is_logged(answer: Answer, cause: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    """The client's own retries are not silent: each failed request (an error, or no answer within the client's read
    timeout: s3fs's 15 s, shortened here) says so before the client tries again, and the deadline ends them all."""
    import s3fs

    monkeypatch.setattr(s3fs.S3FileSystem, "read_timeout", 0.3)
    with (_store_at(answer, tmp_path, monkeypatch) as (store, methods),
          caplog.at_level(logging.WARNING, "pipeline.lake"), pytest.raises(OSError)):
        store.stamp(KEY)
    assert set(methods) == {"HEAD"}
    assert f"object store: HeadObject try 1 failed ({cause}); failed requests in this process: " in caplog.text
