"""The developers' scripts, run from a checkout: `python -m scripts.<name>` (not part of the installed package)."""
