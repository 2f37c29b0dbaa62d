"""The layers import downwards only, as docs/architecture.md draws them: the command line may import the Dagster
wiring, the wiring the engine, and the engine none of them; the emulator plugs into the engine. Every import is
read, those inside functions included. (The order of the engine's own stages is test_imports.py's.)"""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.source_code import imports, modules, write_tree

LAYERS = {
    "pipeline.cli": "cli",
    "pipeline.definitions": "defs",  # the code location: the wiring's entry point
    "pipeline.defs": "defs",
    "pipeline.engine": "engine",
    "pmw_sandbox": "emulator",
}
MAY_IMPORT = {
    "cli": {"cli", "defs", "engine", "emulator"},
    "defs": {"defs", "engine", "emulator"},  # the emulator only when the settings read the sandbox
    "engine": {"engine"},
    "emulator": {"emulator", "engine"},
}


def layer_of(module: str) -> str | None:
    return next((layer for prefix, layer in LAYERS.items() if module == prefix or module.startswith(prefix + ".")),
                None)


def upward_imports(root: Path = REPO_ROOT) -> list[str]:
    found = []
    for module in modules(root):
        layer = layer_of(module.name)
        for imported in imports(module) if layer else ():
            target = layer_of(imported.reached)
            if target and target not in MAY_IMPORT[layer]:
                found.append(module.offence(imported.line, f"{layer} may not import {target}"))
    return found


def test_the_layers_import_downwards_only() -> None:
    found = upward_imports()
    assert not found, "\n".join(found)


def test_an_upward_import_is_seen(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pipeline/engine/lake.py": "def later():\n    from pipeline.defs.assets import thing\n",
        "pipeline/defs/assets.py": "from ..cli import main\nimport pipeline.engine.lake\nthing = 1\n",
        "pmw_sandbox/app.py": "from pipeline import definitions\n",
    })
    assert upward_imports(tmp_path) == [
        "pipeline/defs/assets.py:1: defs may not import cli: from ..cli import main",
        "pipeline/engine/lake.py:2: engine may not import defs: from pipeline.defs.assets import thing",
        "pmw_sandbox/app.py:1: emulator may not import defs: from pipeline import definitions",
    ]
