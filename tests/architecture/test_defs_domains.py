"""The domains of the Dagster wiring (the folders of pipeline/defs/) share only public names: a module of one never
takes a private name (a leading underscore) of another, neither by `from x import _y` nor as `x._y`."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.source_code import Module, imports, is_private, modules, write_tree


def domain_of(name: str) -> str | None:
    """The folder of pipeline/defs/ a dotted name lives in (a module directly in defs/ is a domain of its own)."""
    parts = name.split(".")
    return parts[2] if parts[:2] == ["pipeline", "defs"] and len(parts) > 2 else None


def _dotted(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for an expression that is not a chain of names."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        parent = _dotted(node.value)
        return [*parent, node.attr] if parent else None
    return None


def _taken(module: Module) -> list[tuple[int, str]]:
    """The dotted names a module takes, with their lines: what it imports, and what it reads off an import."""
    taken = [(imported.line, imported.reached) for imported in imports(module)]
    bound = dict(imported.binding for imported in imports(module))
    for node in ast.walk(module.tree):
        chain = _dotted(node) if isinstance(node, ast.Attribute) and is_private(node.attr) else None
        if chain and chain[0] in bound:
            taken.append((node.lineno, ".".join([bound[chain[0]], *chain[1:]])))
    return taken


def private_names_taken(root: Path = REPO_ROOT) -> list[str]:
    found = []
    for module in modules(root):
        domain = domain_of(module.name)
        for line, name in _taken(module) if domain else ():
            other = domain_of(name)
            if other not in (None, domain) and any(map(is_private, name.split(".")[2:])):
                found.append(module.offence(line, f"{name} is private to defs/{other}"))
    return sorted(set(found))


def test_no_domain_takes_a_private_name_of_another() -> None:
    found = private_names_taken()
    assert not found, "\n".join(found)


def test_a_private_name_taken_across_domains_is_seen(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pipeline/defs/ingestion/assets.py": "def _preview(): ...\n",
        "pipeline/defs/ingestion/status.py": "from pipeline.defs.ingestion.assets import _preview\n",
        "pipeline/defs/sports/assets.py": "from pipeline.defs.ingestion.assets import _preview\n",
        "pipeline/defs/profiles/assets.py": "from pipeline.defs.ingestion import assets\nassets._preview()\n",
        "pipeline/defs/orderbooks/assets.py": "import pipeline.defs.ingestion.assets\n"
                                              "pipeline.defs.ingestion.assets._preview()\n",
    })
    assert private_names_taken(tmp_path) == [
        f"pipeline/defs/{domain}/assets.py:{line}: pipeline.defs.ingestion.assets._preview is private to "
        f"defs/ingestion: {code}"
        for domain, line, code in [("orderbooks", 2, "pipeline.defs.ingestion.assets._preview()"),
                                   ("profiles", 2, "assets._preview()"),
                                   ("sports", 1, "from pipeline.defs.ingestion.assets import _preview")]
    ]
