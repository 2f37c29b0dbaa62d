"""The window spool: a window's normalized rows on disk, split by day, between normalization and the lake."""
