"""Dagster resources: the pipeline's settings, its lake and its source.

No `from __future__ import annotations` here: Dagster reads `ResourceDependency` from the live annotation.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from pipeline.engine.config import Settings, Source
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.partitions.protocol import PartitionSource
from pipeline.engine.normalize.partitions.sessions import open_source, open_sports_source
from pipeline.engine.normalize.partitions.sports import SportsSource
from pipeline.engine.sources.factory import Emulator, needs_emulator


class PipelineResource(dg.ConfigurableResource):
    """Where data comes from and lands, by one `Settings` kept for the whole run.

    The settings are `base_settings` when given (what `pmw backfill` and `pmw demo` parse once at start-up),
    else the PMW_* variables, read once when the run starts (`Settings.from_env`; under the multiprocess
    executor, once in each step's process, which has the run's environment); `data_dir` and `sandbox_faults`,
    when set, override theirs. Every `settings()`, `lake()` and `source()` of the run uses that one object,
    whatever the environment does meanwhile.
    """

    base_settings: dg.ResourceDependency[Settings | None] = None
    data_dir: str | None = None
    sandbox_faults: str | None = None

    _settings: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = self._resolve()

    def settings(self) -> Settings:
        """The settings of this run (outside a run: resolved at the first call, then kept)."""
        if self._settings is None:
            self._settings = self._resolve()
        return self._settings

    def unified_api_settings(self, reads: str, why: str = "") -> Settings:
        """The run's settings, for an asset that only the unified API serves (`reads`: what it reads); a failure of
        the step, saying what to set, under PMW_SOURCE=direct."""
        settings = self.settings()
        if settings.source == Source.DIRECT:
            raise dg.Failure(f"{reads} read the unified API{why}: set PMW_SOURCE=api (or sandbox)")
        return settings

    def _resolve(self) -> Settings:
        settings = Settings.from_env() if self.base_settings is None else self.base_settings
        if self.data_dir is not None:
            settings = replace(settings, data_dir=Path(self.data_dir))
        if self.sandbox_faults is not None:
            settings = replace(settings, sandbox_faults=self.sandbox_faults)
        return settings

    def lake(self) -> Lake:
        settings = self.settings()
        return Lake.of(settings, settings.keep_versions)

    @contextmanager
    def source(self, platform: str) -> Iterator[PartitionSource]:
        """A source session for one platform's partitions (an asset step's)."""
        settings = self.settings()
        with open_source(settings, platform, emulator_for(settings)) as source:
            yield source

    @contextmanager
    def sports_source(self) -> Iterator[SportsSource]:
        """A session of the unified API's sports endpoints (an asset step's)."""
        settings = self.settings()
        with open_sports_source(settings, emulator_for(settings)) as source:
            yield source


def emulator_for(settings: Settings) -> Emulator | None:
    """The in-process sandbox when the settings read it, else None: the emulator is loaded only then."""
    if not needs_emulator(settings):
        return None
    from pmw_sandbox.plug import InProcessSandbox

    return InProcessSandbox.of(settings)
