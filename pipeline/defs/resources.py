"""Dagster resources: the pipeline's settings (from PMW_* variables), its lake and its source."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import dagster as dg

from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.sources.factory import Emulator, needs_emulator, open_source
from pipeline.engine.sources.partition import PartitionSource


class PipelineResource(dg.ConfigurableResource):
    """Where data comes from and lands. Empty fields fall back to the environment (see README)."""

    data_dir: str = ""
    sandbox_faults: str = ""

    def settings(self) -> Settings:
        settings = Settings.from_env()
        if self.data_dir:
            settings = replace(settings, data_dir=Path(self.data_dir))
        if self.sandbox_faults:
            settings = replace(settings, sandbox_faults=self.sandbox_faults)
        return settings

    def lake(self) -> Lake:
        return Lake(self.settings().lake_dir)

    @contextmanager
    def source(self, platform: str) -> Iterator[PartitionSource]:
        """A source session for one platform's partitions (an asset step's)."""
        settings = self.settings()
        with open_source(settings, platform, emulator_for(settings)) as source:
            yield source


def emulator_for(settings: Settings) -> Emulator | None:
    """The in-process sandbox when the settings read it, else None: the emulator is loaded only then."""
    if not needs_emulator(settings):
        return None
    from pmw_sandbox.plug import InProcessSandbox

    return InProcessSandbox.of(settings)


@dg.definitions
def resources() -> dg.Definitions:
    """The code location's resources: the pipeline, configured from the PMW_* environment."""
    return dg.Definitions(resources={"pipeline": PipelineResource()})
