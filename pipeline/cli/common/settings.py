"""The configuration check every command that reads settings makes before it runs anything."""

from __future__ import annotations

from pipeline.cli.common.failures import CommandError
from pipeline.engine.config import ConfigError, Settings, check_data_dir


def configured(*, credentials: bool = True, writes: bool = False) -> Settings:
    """Every setting of the environment, checked once: the settings, or CommandError (exit 2) naming the variable,
    its value and what is allowed. `credentials`: the command calls the configured source (PMW_SOURCE=api then
    needs a URL and a key); `writes`: it writes in PMW_DATA_DIR, which must then be a writable folder."""
    try:
        settings = Settings.from_env(credentials=credentials)
        check_data_dir(settings.data_dir, writable=writes)
    except ConfigError as error:
        raise CommandError(str(error)) from None
    return settings
