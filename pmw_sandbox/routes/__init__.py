"""The emulator's endpoints, one module per area of the APIs; `pmw_sandbox.app` dispatches each request to them."""
