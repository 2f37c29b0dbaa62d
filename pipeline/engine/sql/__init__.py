"""The SQL project: its models and tests (project.py) and their builds into the warehouse (build.py)."""
