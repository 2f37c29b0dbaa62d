"""The code location keeps its names, and Dagster's own tools load it from workspace.yaml."""

import json
import subprocess
import sys
from pathlib import Path

from pipeline.definitions import defs
from tests.support.definitions_snapshot import SNAPSHOT, describe
from tests.support.paths import REPO_ROOT


def test_the_code_location_defines_what_the_snapshot_records() -> None:
    assert describe(defs) == json.loads(SNAPSHOT.read_text())


def test_dagster_validates_the_workspace() -> None:
    dagster = Path(sys.executable).with_name("dagster")
    run = subprocess.run([str(dagster), "definitions", "validate", "-w", "workspace.yaml"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Validation successful for code location pipeline.definitions" in run.stdout + run.stderr
