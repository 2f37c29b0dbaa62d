"""The Dagster code location of pm-warehouse (loaded by workspace.yaml, `dagster dev -m pipeline.definitions` and
the `dg` tools, which `[tool.dg]` in pyproject.toml points here).

The PMW_* environment is parsed here, once, and the definitions are built from it (`build_definitions`). The
source's credentials are not required to load: a run checks them as it starts, so the schedules, the sensors and
the UI work without them."""

from pipeline.defs.location import build_definitions
from pipeline.engine.config import Settings

defs = build_definitions(Settings.from_env(credentials=False))
