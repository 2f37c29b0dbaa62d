"""The code location keeps its names: asset keys, checks, jobs, schedules and sensors match the snapshot."""

import json

from pipeline.definitions import defs
from tests.support.definitions_snapshot import SNAPSHOT, describe


def test_the_code_location_defines_what_the_snapshot_records() -> None:
    assert describe(defs) == json.loads(SNAPSHOT.read_text())
