"""The DuckDB warehouse: views over the lake (views.py), the SQL project's models and tests (project.py), and their
builds into the warehouse (build.py)."""
