"""Normalizers: records as a source sends them -> rows of the warehouse tables (pipeline.engine.schema)."""
