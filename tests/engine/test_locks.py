"""Every lock between processes is awaited at most a deadline (issue 39): a holder that hangs fails the waiter with
one line naming the lock, what it guards and the setting, where the wait was endless before."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.engine.config import Settings
from pipeline.engine.locks import LockWaitPassed, held
from pipeline.engine.sources.unified import CatalogueCache
from tests.support.locks import held_elsewhere

DEADLINE_S = 0.3


def test_the_deadline_is_a_setting() -> None:
    assert Settings.from_env({}).lock_timeout_s == 3600.0
    assert Settings.from_env({"PMW_LOCK_TIMEOUT_S": "5"}).lock_timeout_s == 5.0
    with pytest.raises(ValueError, match="PMW_LOCK_TIMEOUT_S"):
        Settings.from_env({"PMW_LOCK_TIMEOUT_S": "0"})


def test_a_lock_held_past_the_deadline_fails_the_wait_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "thing.lock"
    with held_elsewhere(path):
        started = time.monotonic()
        with pytest.raises(LockWaitPassed) as failed, held(path, "the thing", DEADLINE_S):
            pass
        assert time.monotonic() - started < DEADLINE_S + 1.5
    assert str(failed.value) == (f"waited {DEADLINE_S:g} s (PMW_LOCK_TIMEOUT_S) for the lock of the thing, held by "
                                 f"another process: {path}")
    with held(path, "the thing", DEADLINE_S):  # let go: taken at once
        pass


def test_a_catalogue_listed_by_a_process_that_hangs_is_awaited_at_most_the_deadline(tmp_path: Path) -> None:
    cache = CatalogueCache(tmp_path / "catalogue", ttl_s=60, lock_timeout_s=DEADLINE_S)
    with (held_elsewhere(str(cache.path("unified:kalshi")) + ".lock"),
          pytest.raises(LockWaitPassed, match=r"for the lock of the catalogue unified:kalshi, held by another"),
          cache.lock("unified:kalshi")):
        pass
