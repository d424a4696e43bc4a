"""A run's settings: the schema (every default, range and rule), reading and validating
config files, and the physical units of a run."""

from .settings import (KPC_CM, MSUN_1E10_G, SCHEMA, ConfigError, Option, Settings, load_config,
                       markdown_table, parse_overrides, settings_from_flat, validate)

__all__ = ["ConfigError", "Option", "SCHEMA", "Settings", "load_config", "parse_overrides",
           "settings_from_flat", "markdown_table", "validate", "KPC_CM", "MSUN_1E10_G"]
