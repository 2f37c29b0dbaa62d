"""Multipart uploads to the lake's S3 bucket that a writer left open, aborted.

A large object is uploaded in parts; a writer that fails aborts its upload (s3fs does), but one killed mid-upload
leaves it open, its parts stored and billed, unseen by any listing. The first write of each process to a lake asks
the bucket once for the uploads open under the lake's prefix and aborts those begun more than `STALE_UPLOAD_S` ago:
no live writer on any host takes that long over one object (credentials that may not list them: a warning, and the
bucket's own lifecycle rule, if any, does it). Other object stores expire such uploads by themselves
(Google Cloud Storage's resumable uploads in a week, Azure's uncommitted blocks in a week).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

LOG = logging.getLogger(__name__)
STALE_UPLOAD_S = 3600.0
_SWEPT: set[str] = set()  # the lakes (bucket/prefix) this process has swept


def abort_stale_uploads_once(filesystem: Any, root: str, timeout_s: float | None = None) -> list[str]:
    """`abort_stale_uploads` the first time this process writes to the lake at `root` (bucket/prefix), each request
    given `timeout_s` (a request past it: the warning below, as for a listing refused)."""
    if root in _SWEPT:
        return []
    _SWEPT.add(root)
    try:
        return abort_stale_uploads(filesystem, root, STALE_UPLOAD_S, timeout_s)
    except OSError as error:  # refused or timed out (TimeoutError is an OSError): the write goes on
        LOG.warning("the open multipart uploads under s3://%s were not looked at: %s", root, error)
        return []


def abort_stale_uploads(filesystem: Any, root: str, older_than_s: float, timeout_s: float | None = None) -> list[str]:
    """Abort the multipart uploads open under `root` (bucket/prefix) begun more than `older_than_s` seconds ago,
    each request given `timeout_s`; the keys they were for."""
    bucket, _, prefix = root.partition("/")
    since = datetime.now(UTC) - timedelta(seconds=older_than_s)
    aborted: list[str] = []
    markers: dict[str, str] = {}
    while True:
        answer = filesystem.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=f"{prefix}/" if prefix else "",
                                    timeout=timeout_s, **markers)
        for upload in answer.get("Uploads", []):
            if upload["Initiated"] <= since:
                filesystem.call_s3("abort_multipart_upload", Bucket=bucket, Key=upload["Key"],
                                   UploadId=upload["UploadId"], timeout=timeout_s)
                aborted.append(upload["Key"])
        if not answer.get("IsTruncated"):
            return aborted
        markers = {"KeyMarker": answer["NextKeyMarker"], "UploadIdMarker": answer["NextUploadIdMarker"]}
