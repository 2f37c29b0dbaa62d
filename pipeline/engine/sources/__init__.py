"""Sources: the unified API and the platforms, read over one HTTP client; each yields what a partition needs."""
