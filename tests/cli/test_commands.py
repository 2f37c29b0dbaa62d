"""docs/architecture.md's recipe "Add a CLI command" holds: every command that main.py lists adds its parser under
its name and has its `run` (the files the recipe names: tests/architecture/test_architecture_doc.py)."""

from __future__ import annotations

from pipeline.cli.main import COMMANDS, build_parser


def test_every_listed_command_adds_its_parser_under_its_name_and_runs() -> None:
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    assert list(subparsers.choices) == list(COMMANDS)
    assert all(callable(module.run) and callable(module.add_parser) for module in COMMANDS.values())
