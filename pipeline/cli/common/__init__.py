"""What several `pmw` commands share: argument types, the one way a command fails, the settings check, the Dagster
instance, and the runs of the code location's assets."""
