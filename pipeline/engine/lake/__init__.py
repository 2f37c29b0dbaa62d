"""The Parquet lake: `Lake` (store.py: its layout, reads and atomic writes), and the streaming writer (stream.py)."""
