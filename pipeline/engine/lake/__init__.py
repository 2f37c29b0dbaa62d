"""The Parquet lake: its layout and atomic partition writes (store.py), and the streaming writer (stream.py)."""
