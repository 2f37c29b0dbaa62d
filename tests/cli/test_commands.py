"""docs/architecture.md's recipe "Add a CLI command" holds: every command that main.py lists adds its parser under
its name and has its `run`, and the files the recipe names exist."""

from __future__ import annotations

import re
from importlib.metadata import version

import pytest

from pipeline.cli.main import COMMANDS, build_parser, main
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


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"pmw {version('pm-warehouse')}\n"


@pytest.mark.parametrize(("start", "said"), [
    ("2026-11-31", "argument --start: 2026-11-31 is not a day of the calendar (day is out of range for month)"),
    ("2026/11/30", "argument --start: expected a day as YYYY-MM-DD, got '2026/11/30'"),
])
def test_a_day_that_does_not_exist_is_named_as_such(start: str, said: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["backfill", "--start", start])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(said)
