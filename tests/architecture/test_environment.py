"""The environment is read in one place: pipeline/engine/config.py parses it into the settings, and every other
module of the product (the emulator included) is handed its settings, never reading or writing os.environ."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.source_code import Module, imports, modules, write_tree

SETTINGS_MODULE = "pipeline/engine/config.py"
ENVIRONMENT = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_uses(module: Module) -> list[str]:
    """Each `os.environ`, `os.getenv`, `os.putenv`... of a module, and each of those names imported from os."""
    uses = [(imported.line, imported.reached) for imported in imports(module)
            if imported.reached in {f"os.{name}" for name in ENVIRONMENT}]
    os_names = {imported.binding[0] for imported in imports(module) if imported.binding[1] == "os"}
    uses += [(node.lineno, f"os.{node.attr}") for node in ast.walk(module.tree) if isinstance(node, ast.Attribute)
             and node.attr in ENVIRONMENT and isinstance(node.value, ast.Name) and node.value.id in os_names]
    return [module.offence(line, f"{what} outside {SETTINGS_MODULE}") for line, what in sorted(uses)]


def outside_the_settings(root: Path = REPO_ROOT) -> list[str]:
    return [use for module in modules(root) if module.relative != SETTINGS_MODULE for use in environment_uses(module)]


def test_only_the_settings_module_touches_the_environment() -> None:
    uses = outside_the_settings()
    assert not uses, f"{len(uses)} uses of the environment:\n" + "\n".join(uses)


def test_every_way_to_the_environment_is_seen(tmp_path: Path) -> None:
    code = ("import os.path\nimport os as system\nfrom os import environ, getenv, path\n"
            "os.environ['A'] = '1'\nsystem.getenv('B')\nos.putenv('C', '')\nvalue = environ['D']\n")
    write_tree(tmp_path, {SETTINGS_MODULE: code, "pmw_sandbox/app.py": code})
    assert [use.split(":", 2)[1] for use in outside_the_settings(tmp_path)] == ["3", "3", "4", "5", "6"]
    assert outside_the_settings(tmp_path)[0] == (
        "pmw_sandbox/app.py:3: os.environ outside pipeline/engine/config.py: from os import environ, getenv, path")
