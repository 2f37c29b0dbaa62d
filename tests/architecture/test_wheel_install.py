"""A non-editable install works: the wheel that `pip install .` builds (what a Docker image or a server installs)
ships the SQL project and what the demo reads, and from outside the source tree it loads the Dagster code location,
builds the marts, and `pmw demo` lands everything, the example watch lists' traders and order books included.

Kept cheap: the wheel is built with the environment's own setuptools (no isolated build environment), and
installed without its dependencies into a fresh virtual environment that reads the test environment's
site-packages for them (never the checkout: the editable install's path hook is not loaded from there)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO_ROOT, SHIPPED

# Run in the wheel's environment, from a folder that holds no source: the code location loads as Dagster loads
# it, then `pmw sql` builds every model of the shipped SQL project over an empty lake and runs its tests.
SMOKE = textwrap.dedent("""
    import sys
    import pipeline, pipeline.definitions
    from pipeline.cli.main import main
    from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR
    print("pipeline from", pipeline.__file__)
    print("sql from", DEFAULT_SQL_DIR)
    print("assets", len(list(pipeline.definitions.defs.resolve_all_asset_keys())))
    sys.exit(main(["sql"]))
""")
# What the demo lands from the example watch lists it finds in the wheel (a row per table and platform: one day).
WATCHLIST_TABLES = {"orderbook_snapshots": ("polymarket", "kalshi", "limitless", "manifold"),
                    "profiles": ("polymarket", "kalshi")}


def _build_wheel(source: Path, out: Path) -> Path:
    """The wheel of a copy of the project's shipped files, built by setuptools' PEP 517 hook as pip calls it."""
    source.mkdir()
    for name in SHIPPED:
        origin = REPO_ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(origin, source / name)
    hook = f"import setuptools.build_meta as b; print(b.build_wheel({str(out)!r}))"
    built = subprocess.run([sys.executable, "-c", hook], cwd=source, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    return out / built.stdout.strip().splitlines()[-1]


def _fresh_environment(root: Path, wheel: Path) -> Path:
    """A virtual environment holding the wheel alone; the test environment's site-packages supply its
    dependencies. Returns its python."""
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
               "--no-compile", str(wheel)]
    installed = subprocess.run(install, capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return python


@pytest.mark.slow
def test_the_wheel_ships_the_sql_project_and_runs_outside_the_source_tree(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "source", tmp_path / "dist")
    python = _fresh_environment(tmp_path / "venv", wheel)
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_")) and k != "PYTHONPATH"}
    env["PMW_DATA_DIR"] = str(away / "data")
    run = subprocess.run([python, "-c", SMOKE], cwd=away, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    installed = tmp_path / "venv" / "lib"
    lines = run.stdout.splitlines()
    assert Path(lines[0].removeprefix("pipeline from ")).is_relative_to(installed), lines[0]
    assert Path(lines[1].removeprefix("sql from ")).is_relative_to(installed), lines[1]
    assert int(lines[2].removeprefix("assets ")) > 0
    assert "pass test platform_daily_unique_key on marts.platform_daily" in run.stdout
    assert (away / "data" / "warehouse.duckdb").is_file()
    empty = tmp_path / "empty"  # `pmw demo` as a new user runs it: from an empty folder, its data dir the default
    empty.mkdir()
    env.pop("PMW_DATA_DIR")
    env["PMW_RATE_LIMIT_DB"] = str(tmp_path / "budget.sqlite")
    demo = subprocess.run([tmp_path / "venv" / "bin" / "pmw", "demo", "--days", "1"], cwd=empty, env=env,
                          capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    for table, platforms in WATCHLIST_TABLES.items():
        for platform in platforms:
            assert re.search(rf"^\s+{table}\s+{platform}\s+1\s+[1-9]\d*$", demo.stdout, re.MULTILINE), (table, platform)
    # the instance settings ship too: the demo's Dagster home gets the project's pools, and no telemetry banner
    home_settings = yaml.safe_load((empty / "data" / "dagster_home" / "dagster.yaml").read_text())
    assert home_settings["telemetry"] == {"enabled": False} and home_settings["concurrency"]["pools"]
    assert "Telemetry" not in demo.stdout + demo.stderr
