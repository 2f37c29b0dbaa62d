"""The window spool: a window's normalised rows on disk, split by day, between normalisation and the lake."""
