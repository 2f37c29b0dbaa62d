"""An offline emulator of the unified API over a deterministic synthetic world."""

from pipeline.sandbox.app import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
from pipeline.sandbox.catalogue import WorldConfig
from pipeline.sandbox.faults import Faults
from pipeline.sandbox.transport import SandboxTransport, sandbox_client

__all__ = [
    "DEFAULT_API_KEYS",
    "Faults",
    "SandboxApp",
    "SandboxConfig",
    "SandboxTransport",
    "WorldConfig",
    "sandbox_client",
]
