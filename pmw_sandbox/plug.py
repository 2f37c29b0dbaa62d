"""How the emulator plugs into the pipeline: the in-process sandbox of the settings, as an `Emulator`.

The pipeline's source factory reaches every API through an `Endpoint`; with PMW_SOURCE=sandbox (or
PMW_DIRECT_URL=sandbox) the endpoints are this module's, whose transport answers in-process. Only the code that
chooses a source (the Dagster resource, `pmw demo`) imports it, and only when the settings ask for the sandbox.
"""

from __future__ import annotations

from datetime import date
from functools import cache

from pipeline.engine.config import PriceLabel, Secret, Settings
from pipeline.engine.sources.factory import Endpoint
from pmw_sandbox.app import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.faults import Faults
from pmw_sandbox.readings import Readings
from pmw_sandbox.transport import SANDBOX_BASE_URL, SandboxTransport


@cache
def sandbox_app(seed: int, end: date | None, faults: str, readings: str = "",
                days: int = WorldConfig.days) -> SandboxApp:
    """One in-process sandbox per world and process, shared by the runs of that process like a server."""
    world = WorldConfig(seed=seed, end=end, days=days)
    return SandboxApp(SandboxConfig(world=world, faults=Faults.parse(faults), readings=Readings.parse(readings)))


class InProcessSandbox:
    """The sandbox of the settings' world, faults and readings, answering in this process."""

    def __init__(self, app: SandboxApp) -> None:
        self.app = app
        world = app.config.world
        self.cache_key = f"sandbox:{world.seed}:{world.end_day}:{world.days}"
        self.price_label = PriceLabel(app.config.readings.price_label)

    @classmethod
    def of(cls, settings: Settings) -> InProcessSandbox:
        return cls(sandbox_app(settings.sandbox_seed, settings.sandbox_end, settings.sandbox_faults,
                               settings.sandbox_readings, settings.sandbox_days))

    def unified(self) -> Endpoint:
        return Endpoint(SANDBOX_BASE_URL, SandboxTransport(self.app), Secret(DEFAULT_API_KEYS[0]))

    def platform(self, path: str) -> Endpoint:
        return Endpoint(SANDBOX_BASE_URL + path, SandboxTransport(self.app))
