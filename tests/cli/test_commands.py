"""docs/architecture.md's recipe "Add a CLI command" holds: every command that main.py lists adds its parser under
its name and has its `run`, and the files the recipe names exist."""

from __future__ import annotations

import re

from pipeline.cli.main import COMMANDS, build_parser
from tests.support.paths import REPO_ROOT


def test_every_listed_command_adds_its_parser_under_its_name_and_runs() -> None:
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    assert list(subparsers.choices) == list(COMMANDS)
    assert all(callable(module.run) and callable(module.add_parser) for module in COMMANDS.values())


def test_the_recipe_names_files_that_exist() -> None:
    recipe = (REPO_ROOT / "docs" / "architecture.md").read_text().split("### Add a CLI command")[1].split("\n## ")[0]
    named = set(re.findall(r"`((?:pipeline|tests)/[\w/]+(?:\.py)?)`", recipe))
    assert {"pipeline/cli/main.py", "pipeline/cli/common/settings.py", "pipeline/cli/common/runs.py"} <= named
    assert [path for path in sorted(named) if not (REPO_ROOT / path).exists()] == []
