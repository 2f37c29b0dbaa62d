"""The import graph of the project's packages, read from the source (every import, lazy ones included)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import REPO_ROOT

TOP_PACKAGES = ("pipeline", "pmw_sandbox")


@dataclass
class ImportGraph:
    """Modules by dotted name, and the package-to-package edges with the import lines behind each."""

    modules: dict[str, Path]
    edges: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def package_of(self, module: str) -> str:
        """A module's package: itself for a package's __init__, else its parent."""
        return module if self.modules[module].name == "__init__.py" else module.rpartition(".")[0]

    def cycles(self) -> list[list[str]]:
        """The strongly connected groups of more than one package (Tarjan's algorithm)."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        groups: list[list[str]] = []

        def visit(package: str) -> None:
            index[package] = low[package] = len(index)
            stack.append(package)
            on_stack.add(package)
            for target in self.edges.get(package, {}):
                if target not in index:
                    visit(target)
                    low[package] = min(low[package], low[target])
                elif target in on_stack:
                    low[package] = min(low[package], index[target])
            if low[package] == index[package]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == package:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

        for package in sorted({self.package_of(m) for m in self.modules}):
            if package not in index:
                visit(package)
        return groups

    def lines_between(self, group: list[str]) -> list[str]:
        """The imports that tie a group of packages together."""
        members = set(group)
        return sorted(line for source in group for target, lines in self.edges.get(source, {}).items()
                      if target in members for line in lines)


def project_modules(root: Path = REPO_ROOT) -> dict[str, Path]:
    modules = {}
    for top in TOP_PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def import_graph(root: Path = REPO_ROOT) -> ImportGraph:
    graph = ImportGraph(project_modules(root))
    for module, path in graph.modules.items():
        for target in _imported(path):
            resolved = _resolve(target, graph.modules)
            if resolved is None or resolved == module:
                continue
            source_package, target_package = graph.package_of(module), graph.package_of(resolved)
            if source_package != target_package:
                graph.edges.setdefault(source_package, {}).setdefault(target_package, []).append(
                    f"{module} imports {resolved}")
    return graph


def _imported(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an import names (``from a.b import c`` may import module a.b.c or a name of a.b)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None
