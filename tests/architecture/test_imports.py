"""The layers hold: production runs never load the emulator, the engine never loads Dagster, and no two
packages import each other, directly or round a loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.import_graph import ImportGraph, import_graph, project_modules
from tests.support.paths import REPO_ROOT

# What a production process does: load the code location, open a source for a partition, and run the CLI.
PRODUCTION_STEPS = """
import json, sys
import pipeline.definitions
from pipeline.defs.common.resources import PipelineResource
with PipelineResource().source("polymarket"):
    pass
from pipeline.cli.main import main
try:
    main(["backfill", "--help"])
except SystemExit:
    pass
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] == "pmw_sandbox")))
"""


def _loaded_emulator_modules(tmp_path: Path, source: str) -> list[str]:
    env = {**os.environ, "PMW_SOURCE": source, "PMW_API_URL": "http://127.0.0.1:9", "PMW_API_KEY": "key",
           "PMW_DATA_DIR": str(tmp_path / "data"), "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.sqlite")}
    run = subprocess.run([sys.executable, "-c", PRODUCTION_STEPS], env=env, cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_production_run_loads_no_emulator_module(tmp_path: Path) -> None:
    assert _loaded_emulator_modules(tmp_path, "api") == []


def test_a_sandbox_run_loads_the_emulator(tmp_path: Path) -> None:
    """The counter-proof: the same steps with PMW_SOURCE=sandbox do load it, so the test above can fail."""
    assert "pmw_sandbox.plug" in _loaded_emulator_modules(tmp_path, "sandbox")


def test_the_engine_loads_without_dagster() -> None:
    engine = [name for name in project_modules() if name.startswith("pipeline.engine")]
    script = (f"import importlib, sys\nfor name in {engine!r}:\n    importlib.import_module(name)\n"
              "print(sorted(n for n in sys.modules if n.split('.')[0] == 'dagster'))")
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    assert run.stdout.strip() == "[]"


def test_no_two_packages_import_each_other() -> None:
    graph = import_graph()
    loops = {" <-> ".join(group): graph.lines_between(group) for group in graph.cycles()}
    assert not loops, json.dumps(loops, indent=2)


@pytest.mark.parametrize("lazy", [False, True], ids=["module-level", "inside-a-function"])
def test_the_cycle_finder_sees_a_loop(tmp_path: Path, lazy: bool) -> None:
    """Two packages importing each other, one of them lazily, make one cycle."""
    for package, other in (("a", "b"), ("b", "a")):
        (tmp_path / "pipeline" / package).mkdir(parents=True)
        (tmp_path / "pipeline" / package / "__init__.py").write_text("")
        body = f"from pipeline.{other}.mod import thing\n"
        if lazy and package == "b":
            body = f"def later():\n    from pipeline.{other}.mod import thing\n    return thing\n"
        (tmp_path / "pipeline" / package / "mod.py").write_text(body + "thing = 1\n")
    (tmp_path / "pmw_sandbox").mkdir()
    (tmp_path / "pmw_sandbox" / "__init__.py").write_text("")
    graph: ImportGraph = import_graph(tmp_path)
    assert graph.cycles() == [["pipeline.a", "pipeline.b"]]


# The engine's stages, in the order rows flow through them: each imports only the stages before it (and the
# engine's base modules, which import no stage). docs/architecture.md draws the same order.
ENGINE_STAGES = ("sources", "normalize", "spool", "lake", "warehouse")


def _stage_of(module: str) -> int | None:
    """The stage a module of the engine belongs to (its position in ENGINE_STAGES); -1 for a base module."""
    parts = module.split(".")
    if parts[:2] != ["pipeline", "engine"]:
        return None
    return ENGINE_STAGES.index(parts[2]) if len(parts) > 2 and parts[2] in ENGINE_STAGES else -1


def stage_order_breaches(graph: ImportGraph) -> list[str]:
    """The imports inside the engine against the stage order: a stage importing a later stage, or a base module
    importing any stage."""
    breaches = []
    for package, targets in graph.edges.items():
        source_stage = _stage_of(package)
        if source_stage is None:
            continue
        for target, lines in targets.items():
            target_stage = _stage_of(target)
            if target_stage is not None and target_stage > max(source_stage, -1):
                breaches.extend(lines)
    return sorted(set(breaches))


def test_the_engine_stages_run_one_way() -> None:
    breaches = stage_order_breaches(import_graph())
    assert not breaches, "\n".join(breaches)


def test_the_stage_order_sees_a_backward_import(tmp_path: Path) -> None:
    """A stage importing a later one, and a base module importing a stage, are both breaches; the other way is not."""
    modules = {
        "engine/__init__.py": "",
        "engine/files.py": "from pipeline.engine.lake.store import Lake\n",
        "engine/sources/__init__.py": "",
        "engine/sources/http.py": "def later():\n    from pipeline.engine.spool.window import Window\n"
                                  "    return Window\n",
        "engine/spool/__init__.py": "",
        "engine/spool/window.py": "from pipeline.engine.sources.http import later\nWindow = 1\n",
        "engine/lake/__init__.py": "",
        "engine/lake/store.py": "from pipeline.engine.files import Lake\nLake = 1\n",
    }
    for path, body in {"__init__.py": "", **modules}.items():
        (tmp_path / "pipeline" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pipeline" / path).write_text(body)
    (tmp_path / "pmw_sandbox").mkdir()
    (tmp_path / "pmw_sandbox" / "__init__.py").write_text("")
    assert stage_order_breaches(import_graph(tmp_path)) == [
        "pipeline.engine.files imports pipeline.engine.lake.store",
        "pipeline.engine.sources.http imports pipeline.engine.spool.window",
    ]
