"""A command that fails for a reason outside the pipeline (no credentials for the lake's bucket, a full disk, the
bucket's quota, a data dir that is a file) says so in one line on stderr and exits non-zero: no traceback."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import duckdb
import pytest

from pipeline.cli.main import main
from pipeline.engine.config import Settings
from pipeline.engine.lake.storage import ObjectStore
from pipeline.engine.lake.store import Lake
from tests.support.frames import DAY, trades_frame

RESTORE = ["restore", "--table", "trades", "--platform", "kalshi", "--date", DAY.isoformat()]


def _one_line(capsys: pytest.CaptureFixture[str], command: str) -> str:
    """The command's stderr, asserted to be one line naming the command."""
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"pmw {command}: ")
    return err


def _landed_twice(lake: Lake) -> None:
    """A partition written twice: one kept version to restore."""
    for n in (3, 4):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, n, seed=n))


def test_status_and_query_of_a_bucket_without_credentials_are_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    env = {"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
           "PMW_DATA_DIR": str(tmp_path / "data"), "PMW_LAKE_URL": "s3://pmw-nobody/lake"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["status"]) == 1
    assert "Unable to locate credentials" in _one_line(capsys, "status")
    (tmp_path / "data").mkdir()
    duckdb.connect(str(tmp_path / "data" / "warehouse.duckdb")).close()
    assert main(["query", "SELECT count(*) FROM raw.trades"]) == 1
    assert "Unable to locate credentials" in _one_line(capsys, "query")


def test_restore_on_a_full_disk_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    _landed_twice(Lake(tmp_path / "data" / "lake", keep_versions=3))

    def full(source: object, target: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    monkeypatch.setattr(os, "link", full)
    assert main(RESTORE) == 1
    assert "No space left on device" in _one_line(capsys, "restore")


def test_restore_over_the_buckets_quota_is_one_line(s3_lake_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from botocore.exceptions import ClientError
    from s3fs.errors import translate_boto_error

    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PMW_LAKE_URL", s3_lake_url)
    _landed_twice(Lake.of(Settings(data_dir=tmp_path / "data", lake_url=s3_lake_url), keep_versions=3))
    quota = ClientError({"Error": {"Code": "XMinioAdminBucketQuotaExceeded", "Message": "Bucket quota exceeded"}},
                        "CopyObject")

    def over_quota(store: ObjectStore, source: str, target: str) -> None:
        raise translate_boto_error(quota)  # what s3fs raises for the server's answer

    monkeypatch.setattr(ObjectStore, "copy", over_quota)
    monkeypatch.setattr(ObjectStore, "freeze", lambda store, files, directory: over_quota(store, "", directory))
    assert main(RESTORE) == 1
    assert "Bucket quota exceeded" in _one_line(capsys, "restore")


def test_demo_in_a_data_dir_that_is_a_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "a-file"))
    assert main(["demo"]) == 2
    assert "which is a file" in _one_line(capsys, "demo")

