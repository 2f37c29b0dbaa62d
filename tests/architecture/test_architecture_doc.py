"""docs/architecture.md stays the map of the code: its trees name every module and package where it is and nothing
that is not there, its recipes name the files each change touches, and its arrows are the ones the import tests
enforce.

A tree is a fenced block whose first line is a folder alone (`pipeline/engine/`). In it, a line at the margin
names a path from the repository root; a line indented two spaces deeper than a folder's names what that folder
holds, by its name and a description after two spaces or more (`sources/`, `http.py  HttpLayer: ...`, or several
at once: `polymarket.py, kalshi.py  ...`); any other line continues a description.
"""

from __future__ import annotations

import inspect
import itertools
import re
from pathlib import Path

from pipeline.cli import main as cli_main
from pipeline.cli.common.failures import CommandError
from pipeline.cli.common.runs import materialise
from pipeline.cli.common.settings import configured
from pipeline.defs.ingestion.assets import ingestion_asset
from pipeline.engine.checks import Check, checks_for
from pipeline.engine.normalize import mappings, native
from pipeline.engine.normalize.partitions.protocol import PartitionSource
from pipeline.engine.normalize.partitions.sessions import open_source
from pipeline.engine.reconciliation import Reconciliation
from pipeline.engine.schema import markets
from pipeline.engine.schema.core import Platform
from pipeline.engine.sources.factory import open_platform_pages
from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR
from pmw_sandbox.app import SandboxApp
from scripts import generate_docs
from tests.architecture.test_imports import ENGINE_STAGES
from tests.architecture.test_layers import MAY_IMPORT, layer_of
from tests.support.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "architecture.md"
PACKAGES = ("pipeline", "pmw_sandbox")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
NAME = r"[\w/]*\w(?:\.py|/)"
ENTRY = re.compile(rf"( *)({NAME}(?:, {NAME})*)(?:  |$)")
ARROW = re.compile(r"\s*(?:->|─+►)\s*")
CHAIN = re.compile(r"[\w/]+(?:\s*(?:->|─+►)\s*[\w/]+)+")
# A path a recipe names: a backticked word ending as a file or a folder does (`<name>` a placeholder in it).
RECIPE_PATH = re.compile(r"`([\w/<>.-]*(?:\.py|\.sql|\.md|\.csv|/))`")


def _relative(path: Path | str) -> str:
    path = Path(path).resolve()
    return path.relative_to(REPO_ROOT).as_posix() + ("/" if path.is_dir() else "")


def _source(thing: object) -> str:
    """The file a class, function or module is written in."""
    return _relative(inspect.getfile(inspect.getmodule(thing)))  # type: ignore[arg-type]


# What each recipe must name: where the code keeps what the new thing joins, found from the code so that a move
# shows. The recipe may name more; every path it names must exist.
RECIPES = {
    "Add a platform": [_source(Platform), _source(open_platform_pages), _source(native), _source(mappings),
                       _source(open_source), _source(SandboxApp)],
    "Add a table": [_source(markets), _source(checks_for), _source(PartitionSource), _source(SandboxApp),
                    _source(ingestion_asset), _relative(DEFAULT_SQL_DIR / "staging"), _source(generate_docs)],
    "Add a check": [_source(Check), _source(Reconciliation)],
    "Add a mart": [_relative(DEFAULT_SQL_DIR / "marts"), _relative(DEFAULT_SQL_DIR / "tests")],
    "Add a CLI command": [_source(cli_main), _source(configured), _source(CommandError), _source(materialise)],
}


def code_paths(root: Path = REPO_ROOT) -> set[str]:
    """Every module (but `__init__.py`) and every package below the top packages, as a tree would name it."""
    paths = set()
    for package in PACKAGES:
        for path in (root / package).rglob("*"):
            if path.suffix == ".py" and path.name != "__init__.py":
                paths.add(path.relative_to(root).as_posix())
            elif path.is_dir() and (path / "__init__.py").exists():
                paths.add(path.relative_to(root).as_posix() + "/")
    return paths


def tree_paths(doc: str) -> list[str]:
    """The paths the doc's trees name, from the repository root (a folder's with a trailing slash)."""
    named = []
    for block in FENCE.findall(doc):
        lines = block.splitlines()
        if not lines or not re.fullmatch(r"[\w/]+/", lines[0]):
            continue
        folders: list[tuple[int, str]] = []  # the open folders: (indent, path)
        for line in lines:
            entry = ENTRY.match(line)
            indent = len(entry.group(1)) if entry else -1
            while folders and folders[-1][0] >= indent >= 0:
                folders.pop()
            if not entry or (indent and (not folders or indent != folders[-1][0] + 2)):
                continue  # a description's next line
            parent = folders[-1][1] if indent else ""
            for name in entry.group(2).split(", "):
                named.append(parent + name)
                if name.endswith("/"):
                    folders.append((indent, parent + name))
    return named


def _there(root: Path, path: str) -> bool:
    return (root / path).is_dir() if path.endswith("/") else (root / path).is_file()


def tree_offences(doc: str, root: Path = REPO_ROOT) -> list[str]:
    named = tree_paths(doc)
    missing = [f"the trees name {path}, which is not there" for path in named if not _there(root, path)]
    unnamed = [f"no tree names {path} (under {path.rstrip('/').rpartition('/')[0]}/)"
               for path in sorted(code_paths(root) - set(named))]
    return missing + unnamed


def recipes(doc: str) -> dict[str, str]:
    """Each recipe's text, by its heading."""
    section = doc.split("\n## Recipes\n", 1)[1].split("\n## ", 1)[0]
    return {part.split("\n", 1)[0].strip(): part for part in section.split("\n### ")[1:]}


def _placeholders_folder(path: str) -> str:
    """A path with a placeholder (`pipeline/cli/<name>.py`) stands for its folder (`pipeline/cli/`)."""
    return path.split("<", 1)[0].rpartition("/")[0] + "/" if "<" in path else path


def recipe_offences(doc: str, root: Path = REPO_ROOT) -> list[str]:
    written = recipes(doc)
    found = [f"no recipe '{title}'" for title in RECIPES if title not in written]
    for title, text in written.items():
        named = {path: _placeholders_folder(path) for path in RECIPE_PATH.findall(text)}
        found += [f"recipe '{title}' names `{path}`, which is not there"
                  for path, there in named.items() if not _there(root, there)]
        found += [f"recipe '{title}' does not name {path}"
                  for path in RECIPES.get(title, []) if path not in named.values()]
    return found


def _layer(folder: str) -> str:
    """test_layers.py's layer of a folder (`pipeline/defs/` is defs)."""
    return layer_of(folder.strip("/").replace("/", ".")) or folder


def arrow_offences(doc: str) -> list[str]:
    """The doc's arrows against the import tests': the layers' chain, and every chain of the engine's stages."""
    chains = [ARROW.split(chain) for chain in CHAIN.findall(doc)]
    layers = [chain for chain in chains if chain[0] == "pipeline/cli/"]
    stages = [[stage.rstrip("/") for stage in chain] for chain in chains if chain[0].rstrip("/") == "sources"]
    found = [] if layers else ["no arrows from pipeline/cli/ (the layers)"]
    for chain in layers:
        for upper, lower in itertools.pairwise(chain):
            upper_layer, lower_layer = _layer(upper), _layer(lower)
            if lower_layer not in MAY_IMPORT.get(upper_layer, ()) or upper_layer in MAY_IMPORT.get(lower_layer, ()):
                found.append(f"the arrow {upper} -> {lower} is not a layer importing the one below it")
    found += [] if stages else ["no arrows from sources (the engine's stages)"]
    found += [f"the stages {' -> '.join(chain)} are not test_imports.py's {' -> '.join(ENGINE_STAGES)}"
              for chain in stages if tuple(chain) != ENGINE_STAGES]
    return found


def test_the_trees_name_every_module_and_package_where_it_is() -> None:
    offences = tree_offences(DOC.read_text())
    assert not offences, "\n".join(offences)


def test_every_recipe_names_the_files_it_touches_and_they_exist() -> None:
    offences = recipe_offences(DOC.read_text())
    assert not offences, "\n".join(offences)


def test_the_arrows_are_the_layers_and_stages_the_import_tests_enforce() -> None:
    offences = arrow_offences(DOC.read_text())
    assert not offences, "\n".join(offences)
