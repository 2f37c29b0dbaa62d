"""Extraction: the unified API and the platforms, read over one HTTP client; their answers as received."""
