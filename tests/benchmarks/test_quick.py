"""The benchmarks still run: their quick mode prints every table and records its figures.

Only that they run and what shape their output has: no figure is judged here (timings on a shared
machine prove nothing, and the quick sizes are too small to mean anything).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

TITLES = ("Normalization:", "Memory:", "Request efficiency:", "Requests per window:", "Queries:",
          "Snapshot rounds beside the daily ingestion:", "market_links against the truth:")
# Every mode but `peers`, which installs dlt from the package registry on first use: tests never reach the internet.
BENCHMARKS = ("normalisation", "memory", "requests", "windows", "queries", "snapshots", "links")


@pytest.mark.slow
def test_the_quick_benchmarks_print_every_table_and_record_their_figures(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", ",".join(BENCHMARKS), "--results", str(results),
         "--workdir", str(tmp_path / "work")],
        cwd=REPO_ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_HOME"))},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    for title in TITLES:
        assert title in completed.stdout
    assert "targets met; figures recorded in" in completed.stdout

    recorded = json.loads(results.read_text())
    assert recorded["mode"] == "quick"
    assert {"cpu", "nproc", "memory_gb", "python", "libraries"} <= recorded["machine"].keys()
    assert sorted(recorded["benchmarks"]) == sorted(BENCHMARKS)
    for name, benchmark in recorded["benchmarks"].items():
        assert benchmark["figures"], name
        assert benchmark["targets"], name
        assert all({"description", "met", "detail"} <= target.keys() for target in benchmark["targets"])
    landed = recorded["benchmarks"]["memory"]["figures"]["worlds"]["few markets"]
    assert landed["rows"] == landed["day_trades"] > 0
