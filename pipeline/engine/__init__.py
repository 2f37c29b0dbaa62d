"""The engine, free of Dagster: sources -> raw pages -> normalized rows -> the Parquet lake -> the DuckDB warehouse
and its SQL project. Everything here runs, and is tested, without a Dagster instance."""
