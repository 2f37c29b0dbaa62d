"""An offline emulator of the unified API over a deterministic synthetic world."""

from pmw_sandbox.app import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.faults import Faults
from pmw_sandbox.transport import SandboxTransport, sandbox_client

__all__ = [
    "DEFAULT_API_KEYS",
    "Faults",
    "SandboxApp",
    "SandboxConfig",
    "SandboxTransport",
    "WorldConfig",
    "sandbox_client",
]
