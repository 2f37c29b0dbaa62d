"""What `pmw` says of its own arguments: its version, and a day that is not one."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from pipeline.cli.main import main


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
