"""The product's source as the architecture rules read it: its modules parsed, their imports (relative ones
resolved), their comments by line, and one message per offence, `path:line: what: the line`."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tests.support.import_graph import project_modules
from tests.support.paths import REPO_ROOT


@dataclass
class Module:
    name: str  # dotted, as imported: pipeline.defs.ingestion.assets
    path: Path
    root: Path

    @cached_property
    def text(self) -> str:
        return self.path.read_text()

    @cached_property
    def tree(self) -> ast.Module:
        return ast.parse(self.text)

    @property
    def relative(self) -> str:
        return self.path.relative_to(self.root).as_posix()

    @cached_property
    def comments(self) -> dict[int, str]:
        """The comment of each line that has one, without its `#`."""
        tokens = tokenize.generate_tokens(io.StringIO(self.text).readline)
        return {token.start[0]: token.string.lstrip("#").strip() for token in tokens if token.type == tokenize.COMMENT}

    @property
    def package(self) -> str:
        return self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]

    def offence(self, line: int, what: str) -> str:
        return f"{self.relative}:{line}: {what}: {self.text.splitlines()[line - 1].strip()}"


@dataclass(frozen=True)
class Import:
    """One name an import statement takes: `import a.b as x`, or the `c` of `from a.b import c, d`."""

    statement: ast.Import | ast.ImportFrom
    alias: ast.alias
    module: str  # the module named: `a.b` of `import a.b` and of `from a.b import c` (relative ones resolved)

    @property
    def line(self) -> int:
        return self.alias.lineno

    @property
    def reached(self) -> str:
        """`a.b` for `import a.b`; `a.b.c` for `from a.b import c` (a module, or a name of module `a.b`)."""
        return f"{self.module}.{self.alias.name}" if isinstance(self.statement, ast.ImportFrom) else self.module

    @property
    def binding(self) -> tuple[str, str]:
        """The name the import binds in the importing module, and the dotted name that name stands for."""
        if isinstance(self.statement, ast.ImportFrom) or self.alias.asname:
            return self.alias.asname or self.alias.name, self.reached
        top = self.module.partition(".")[0]
        return top, top


def modules(root: Path = REPO_ROOT) -> list[Module]:
    """Every module of pipeline/ and pmw_sandbox/."""
    return [Module(name, path, root) for name, path in project_modules(root).items()]


def imports(module: Module) -> Iterator[Import]:
    """Every import of a module, those inside functions included."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            yield from (Import(node, alias, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = module.package.split(".")[: len(module.package.split(".")) - node.level + 1] if node.level else []
            named = ".".join([*base, *([node.module] if node.module else [])])
            yield from (Import(node, alias, named) for alias in node.names)


def is_private(name: str) -> bool:
    """A leading underscore, dunder names (`__version__`) aside."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """A throwaway project for a rule's counter-proof: the files given, an `__init__.py` in each folder."""
    for relative, text in files.items():
        path = root / relative
        for folder in reversed(path.relative_to(root).parents):
            if folder != Path("."):
                (root / folder).mkdir(exist_ok=True)
                (root / folder / "__init__.py").touch()
        path.write_text(text)
    return root
